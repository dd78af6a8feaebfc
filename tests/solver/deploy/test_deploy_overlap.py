"""Two-batch overlap deployed as planned: a pool the plan timed with two overlapped
micro-batches (`efficiency.two_batch_overlap` on an MoE model at EP above 1) is launched
with the engine's own switch and the all-to-all backend it needs; TensorRT-LLM, which has
none, says so in its options file; and the written fleet reads back to the plan's cost.

The instance is moe-ep's Qwen3-235B-A22B on H200 held to DEP8 (TP1, attention DP8, EP8):
it solves in well under a second."""

from pathlib import Path

import pytest
import yaml

from models.schema.instance import Instance
from solver.deploy.engines import TRTLLM_NO_OVERLAP, sglang_command, trtllm_notes, vllm_command
from solver.deploy.files import deploy_files
from solver.deploy.fleet_import import fleet_plan, owned_gpus, pools_from_kubernetes, with_existing
from solver.deploy.pools import deploy_pools
from solver.solve import solve
from solver.verify.fleet import verify

MOE_EP = Path(__file__).parents[3] / "instances" / "moe-ep.yaml"
VLLM_SWITCH = ("--enable-dbo", "--all2all-backend")
SGLANG_SWITCH = ("--enable-two-batch-overlap", "--moe-a2a-backend")


def _document(overlap: bool, expert_parallel: int) -> dict:
    document = yaml.safe_load(MOE_EP.read_text())
    document["policy"].update(
        tensor_parallel=[1], expert_parallel=[expert_parallel], attention_data_parallel=[8]
    )
    document["efficiency"] = {"two_batch_overlap": overlap}
    return document


@pytest.fixture(scope="module")
def solved():
    """(document, instance, plan) per (overlap, EP): DEP8 with and without the overlap,
    and attention DP8 over experts split by TP (EP1, no all-to-all for the engines)."""
    cases = {}
    for overlap, ep in ((True, 8), (False, 8), (True, 1)):
        document = _document(overlap, ep)
        instance = Instance.model_validate(document)
        cases[overlap, ep] = (document, instance, solve(instance))
    return cases


def _after(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_an_overlapped_ep_pool_is_launched_with_the_engines_switch(solved):
    _, instance, plan = solved[True, 8]
    pools = deploy_pools(instance, plan)
    assert pools and all(p.ep == 8 and p.two_batch_overlap for p in pools)
    for pool in pools:
        vllm, sglang = vllm_command(pool), sglang_command(pool)
        assert "--enable-dbo" in vllm and "--enable-expert-parallel" in vllm
        # a unified or decode pool runs DeepEP's low-latency kernels, a prefill pool its
        # high-throughput ones; DBO refuses vLLM's default allgather_reducescatter
        kernels = "deepep_high_throughput" if pool.role == "prefill" else "deepep_low_latency"
        assert _after(vllm, "--all2all-backend") == kernels
        assert "--enable-two-batch-overlap" in sglang
        assert _after(sglang, "--moe-a2a-backend") == "deepep"
        assert trtllm_notes(pool) == [TRTLLM_NO_OVERLAP]
    options = deploy_files(instance, plan, "trtllm")
    headed = [text for name, text in options.items() if name.endswith("options.yaml")]
    assert headed and all(TRTLLM_NO_OVERLAP in text.splitlines()[:2] for text in headed)
    assert all(yaml.safe_load(text) for text in headed)  # the comment leaves the YAML whole


@pytest.mark.parametrize("case", [(False, 8), (True, 1)], ids=["overlap-off", "ep1"])
def test_no_switch_without_the_overlap_or_without_ep(solved, case):
    """Overlap off at EP8, or on at EP1 (the engines have no all-to-all to overlap there):
    no switch, no backend, no TensorRT-LLM note."""
    _, instance, plan = solved[case]
    pools = deploy_pools(instance, plan)
    assert pools and not any(p.two_batch_overlap for p in pools)
    for pool in pools:
        assert not set(VLLM_SWITCH) & set(vllm_command(pool))
        assert not set(SGLANG_SWITCH) & set(sglang_command(pool))
        assert trtllm_notes(pool) == []
    options = deploy_files(instance, plan, "trtllm")
    assert not any(TRTLLM_NO_OVERLAP in text for text in options.values())


def test_the_overlapped_fleet_reads_back_to_the_plans_cost(solved):
    """deploy -> fleet-import -> verify: the same replicas, GPUs and cost. Each replica is
    8 H200 at $3.10 an hour, 730 hours a month: replicas x 8 x 3.10 x 730."""
    document, instance, plan = solved[True, 8]
    imported = pools_from_kubernetes("".join(deploy_files(instance, plan, "k8s").values()))
    fleet = fleet_plan(imported)
    assert {(p.key, p.count) for p in fleet.replicas} == {
        (p.key, p.count) for p in plan.replicas if p.count
    }
    replicas = sum(p.count for p in plan.replicas)
    result = verify(instance, fleet)
    assert result.ok, result
    assert result.cost_per_month == pytest.approx(replicas * 8 * 3.10 * 730)
    assert result.cost_per_month == pytest.approx(plan.cost_per_month)
    running = Instance.model_validate(with_existing(document, owned_gpus(imported)))
    assert verify(running, fleet).ok
