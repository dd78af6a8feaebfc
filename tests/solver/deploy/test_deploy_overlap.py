"""Two-batch overlap deployed as planned: a pool the plan timed with two overlapped
micro-batches (`efficiency.two_batch_overlap` at a layout the engine profile's engine runs
it on, `Efficiency.overlaps`) is launched with each engine's own switch and the all-to-all
backend it needs where that engine runs it at the pool's layout (vLLM at attention DP and
EP above 1, SGLang at EP = TP x DP above 1); an engine that does not (TensorRT-LLM, or vLLM
at DP 1 for a plan made on SGLang's profile) gets no switch and a comment saying the plan
assumed it; and the written fleet reads back to the plan's cost.

The instance is moe-ep's Qwen3-235B-A22B on H200 held to one layout: each solves in well
under a second."""

from pathlib import Path

import pytest
import yaml

from models.schema.instance import Instance
from solver.deploy.engines import (
    TRTLLM_NO_OVERLAP,
    overlap_notes,
    sglang_command,
    trtllm_notes,
    vllm_command,
)
from solver.deploy.files import deploy_files
from solver.deploy.fleet_import import fleet_plan, owned_gpus, pools_from_kubernetes, with_existing
from solver.deploy.pools import deploy_pools
from solver.solve import solve
from solver.verify.fleet import verify

MOE_EP = Path(__file__).parents[3] / "instances" / "moe-ep.yaml"
VLLM_SWITCH = ("--enable-dbo", "--all2all-backend")
SGLANG_SWITCH = ("--enable-two-batch-overlap", "--moe-a2a-backend")
DEP8 = (1, 8, 8)  # TP1 x attention DP8 x EP8
TP8_EP8 = (8, 1, 8)  # TP8 x attention DP1 x EP8
CASES = [
    ("sglang-0.5", True, DEP8),
    ("sglang-0.5", False, DEP8),
    ("sglang-0.5", True, (1, 8, 1)),  # attention DP8 over TP-split experts: no all-to-all
    ("sglang-0.5", True, TP8_EP8),
    ("vllm-0.11", True, DEP8),
    ("vllm-0.11", True, TP8_EP8),
    ("vllm-0.11", False, TP8_EP8),
]


def _document(engine: str, overlap: bool, layout: tuple[int, int, int]) -> dict:
    tp, dp, ep = layout
    document = yaml.safe_load(MOE_EP.read_text())
    document["engine"] = engine
    document["policy"].update(
        tensor_parallel=[tp], expert_parallel=[ep], attention_data_parallel=[dp]
    )
    document["efficiency"] = {"two_batch_overlap": overlap}
    return document


@pytest.fixture(scope="module")
def solved():
    """(document, instance, plan) per (engine profile, overlap, (TP, DP, EP))."""
    cases = {}
    for case in CASES:
        document = _document(*case)
        instance = Instance.model_validate(document)
        cases[case] = (document, instance, solve(instance))
    return cases


def _after(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


@pytest.mark.parametrize("engine", ["sglang-0.5", "vllm-0.11"])
def test_an_overlapped_dep8_pool_is_launched_with_the_engines_switch(solved, engine):
    """DEP8 runs the overlap in both engines (vLLM: --data-parallel-size 8 with
    --enable-expert-parallel; SGLang: DeepEP over the 8 GPUs), on either's profile."""
    _, instance, plan = solved[engine, True, DEP8]
    pools = deploy_pools(instance, plan)
    assert pools and all(p.ep == 8 and p.dp == 8 and p.two_batch_overlap for p in pools)
    for pool in pools:
        vllm, sglang = vllm_command(pool), sglang_command(pool)
        assert "--enable-dbo" in vllm and "--enable-expert-parallel" in vllm
        assert _after(vllm, "--data-parallel-size") == "8"
        # a unified or decode pool runs DeepEP's low-latency kernels, a prefill pool its
        # high-throughput ones; DBO refuses vLLM's default allgather_reducescatter
        kernels = "deepep_high_throughput" if pool.role == "prefill" else "deepep_low_latency"
        assert _after(vllm, "--all2all-backend") == kernels
        assert "--enable-two-batch-overlap" in sglang
        assert _after(sglang, "--moe-a2a-backend") == "deepep"
        assert overlap_notes("vllm", pool) == overlap_notes("sglang", pool) == []
        assert trtllm_notes(pool) == [TRTLLM_NO_OVERLAP]
    options = deploy_files(instance, plan, "trtllm")
    headed = [text for name, text in options.items() if name.endswith("options.yaml")]
    assert headed and all(TRTLLM_NO_OVERLAP in text.splitlines()[:2] for text in headed)
    assert all(yaml.safe_load(text) for text in headed)  # the comment leaves the YAML whole


def test_vllm_at_dp1_is_planned_and_launched_without_the_overlap(solved):
    """vLLM's DBO splits nothing at --data-parallel-size 1: a TP8 x EP8 plan on vLLM's
    profile with the flag on is the plan with it off (same replicas, same cost, no pool
    timed overlapped) and no launch carries --enable-dbo or a note."""
    _, instance, plan = solved["vllm-0.11", True, TP8_EP8]
    _, _, off = solved["vllm-0.11", False, TP8_EP8]
    assert plan.cost_per_month == off.cost_per_month
    assert {(p.key, p.count) for p in plan.replicas} == {(p.key, p.count) for p in off.replicas}
    pools = deploy_pools(instance, plan)
    assert pools and all(p.tp == 8 and p.dp == 1 and p.ep == 8 for p in pools)
    assert not any(p.two_batch_overlap for p in pools)
    for pool in pools:
        assert not set(VLLM_SWITCH) & set(vllm_command(pool))
        assert overlap_notes("vllm", pool) == [] and trtllm_notes(pool) == []
    scripts = deploy_files(instance, plan, "vllm")
    assert not any("two-batch overlap" in text for text in scripts.values())


def test_an_sglang_tp8_ep8_plan_overlaps_in_sglang_and_tells_vllm_it_cannot(solved):
    """SGLang runs TBO at TP8 x EP8 (DeepEP over the 8 GPUs, attention TP): the plan on its
    profile is timed overlapped and launched with the switch. Deployed to vLLM, which does
    not split at DP 1, it gets no --enable-dbo and its script says the plan assumed it."""
    _, instance, plan = solved["sglang-0.5", True, TP8_EP8]
    pools = deploy_pools(instance, plan)
    assert pools and all(p.two_batch_overlap for p in pools)
    for pool in pools:
        assert _after(sglang_command(pool), "--moe-a2a-backend") == "deepep"
        assert not set(VLLM_SWITCH) & set(vllm_command(pool))
        (note,) = overlap_notes("vllm", pool)
        assert note.startswith("# ") and "TP8 x DP1 x EP8" in note
    scripts = deploy_files(instance, plan, "vllm")
    shown = [text for name, text in scripts.items() if name.endswith(".sh")]
    assert shown and all(text.splitlines()[2].startswith("# The plan timed") for text in shown)
    assert all(text.splitlines()[3].startswith("exec vllm serve") for text in shown)


@pytest.mark.parametrize(
    "case",
    [("sglang-0.5", False, DEP8), ("sglang-0.5", True, (1, 8, 1))],
    ids=["overlap-off", "ep1"],
)
def test_no_switch_without_the_overlap_or_without_ep(solved, case):
    """Overlap off at EP8, or on at EP1 (the engines have no all-to-all to overlap there):
    no switch, no backend, no note."""
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
    document, instance, plan = solved["sglang-0.5", True, DEP8]
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
