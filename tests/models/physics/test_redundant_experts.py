"""Redundant experts (EPLB): the layout rule over routed + redundant experts, DeepSeek-V3's
weights per GPU at EP72 with 32 copies by hand, an imbalance no worse than without them,
hostile counts refused, and an EP72 instance that solves, verifies and deploys with the
engines' EPLB flags."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.exit_codes import ExitCode
from models.io.loading import validate_instance
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.memory import (
    expert_layout_problem,
    memory_budget,
    weight_bytes_per_gpu,
    weight_bytes_per_gpu_ep,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.schema.checks import input_warnings
from solver.deploy.engines import sglang_command, trtllm_options, vllm_command
from solver.deploy.fleet_import import merged, pools_from_csv, pools_from_objects
from solver.deploy.manifests import kubernetes_objects
from solver.deploy.pools import deploy_pools
from solver.solve import solve
from solver.verify.fleet import verify

FP8 = Precision.FP8
DSV3 = llm_catalog()["deepseek-v3"]
H100 = gpu_catalog()["h100-sxm"]

EP72_INSTANCE = {
    "name": "ep72",
    "gpus": [{"name": "h100-sxm"}],
    "models": [{"name": "deepseek-v3", "weight_precisions": ["fp8"]}],
    "regions": [
        {"name": "us-east", "supply": {"h100-sxm": {"max_gpus": 512, "price_per_gpu_hour": 2.0}}}
    ],
    "workloads": [
        {
            "name": "chat",
            "model": "deepseek-v3",
            "demand": {"us-east": {"peak_requests_per_s": 50}},
            "prompt_tokens": {"mean": 2000, "p99": 4000},
            "output_tokens": {"mean": 500, "p99": 1000},
            "slo": {"ttft_p99_ms": 5000, "tpot_p99_ms": 200},
        }
    ],
    "policy": {
        "tensor_parallel": [1],
        "expert_parallel": [72],
        "attention_data_parallel": [72],
        "redundant_experts": [32],
    },
}


def _instance(**policy):
    data = json.loads(json.dumps(EP72_INSTANCE))
    data["policy"].update(policy)
    return validate_instance(data, "ep72.yaml")


def test_ep_divides_routed_plus_redundant_experts():
    """256 routed experts: EP72 leaves 256 / 72 = 3.56 a rank, refused; with 32 copies
    288 / 72 = 4, placed. EP48 on 48 GPUs: 288 / 48 = 6, placed; 256 / 48 is not whole.
    EP64 with 32 copies: 288 / 64 = 4.5, refused naming both counts."""
    assert "256 routed experts" in expert_layout_problem(DSV3, 1, 72, 72)
    assert expert_layout_problem(DSV3, 1, 72, 72, 32) is None
    assert expert_layout_problem(DSV3, 1, 48, 48, 32) is None
    assert expert_layout_problem(DSV3, 1, 48, 48) is not None
    assert "256 routed + 32 redundant = 288" in expert_layout_problem(DSV3, 1, 64, 64, 32)


def test_copies_need_expert_parallelism_an_moe_model_and_at_most_one_copy_each():
    llama = llm_catalog()["llama-3.1-8b"]
    assert "need EP > 1" in expert_layout_problem(DSV3, 8, 1, 1, 32)
    assert "dense" in expert_layout_problem(llama, 1, 1, 1, 8)
    assert "more than one copy" in expert_layout_problem(DSV3, 1, 8, 8, 264)
    assert "at least 0" in expert_layout_problem(DSV3, 1, 8, 8, -8)


def test_ep72_with_32_copies_holds_four_experts_a_gpu():
    """DeepSeek-V3 at TP1 x DP72, EP72 with 32 redundant experts: each GPU holds the
    dense part of one TP1 GPU and 288 / 72 = 4 routed experts of each of its 58 MoE layers.
    An expert is 3 x 7,168 x 2,048 = 44,040,192 weights, 1 byte each at FP8, so a GPU
    holds 4 x 58 x 44,040,192 bytes of routed experts where TP1 alone holds 256 x that."""
    expert_bytes = 3 * 7168 * 2048 * 1
    tp1 = weight_bytes_per_gpu(DSV3, FP8, 1, 1)
    ep72 = weight_bytes_per_gpu_ep(DSV3, FP8, 1, 1, 72, 72, 32)
    assert tp1 - ep72 == pytest.approx((256 - 4) * 58 * expert_bytes)
    # Beside EP8 over the same 72 GPUs (256 / 72 experts' worth a GPU, no copies) the 32
    # copies cost 32 / 72 experts a layer a GPU, and that much KV room.
    ep8 = weight_bytes_per_gpu_ep(DSV3, FP8, 1, 1, 8, 72)
    assert ep72 - ep8 == pytest.approx(32 / 72 * 58 * expert_bytes)
    efficiency = efficiency_for(H100, FP8)
    with_copies = memory_budget(H100, DSV3, FP8, FP8, 1, 1, efficiency, 72, 72, 32)
    without = memory_budget(H100, DSV3, FP8, FP8, 1, 1, efficiency, 8, 72)
    assert with_copies.weight_bytes_per_gpu == pytest.approx(ep72)
    assert with_copies.kv_capacity_tokens < without.kv_capacity_tokens


def test_default_zero_copies_change_nothing():
    efficiency = efficiency_for(H100, FP8)
    plain = step_model(H100, DSV3, FP8, FP8, 1, 1, efficiency, ep=8, dp=8)
    zero = step_model(H100, DSV3, FP8, FP8, 1, 1, efficiency, ep=8, dp=8, redundant=0)
    assert plain == zero


@given(tokens=st.floats(min_value=1.0, max_value=1e5))
def test_copies_never_worsen_the_imbalance(tokens):
    """EPLB places the copies so each of the E + R slots draws 1 / (E + R) of the choices:
    a rank draws 1 / ep as before, the same multinomial, and the cap (a token sends at
    most min(k, slots a rank) of its choices to one rank) only widens with more slots.
    DeepSeek-V3 at EP32 (8 or 9 experts a rank; top-8)."""
    efficiency = efficiency_for(H100, FP8)
    layouts = [
        step_model(H100, DSV3, FP8, FP8, 1, 1, efficiency, ep=32, dp=32, redundant=r)
        for r in (0, 32)
    ]
    without, with_copies = (steps.experts_layout.imbalance(tokens) for steps in layouts)
    assert with_copies <= without + 1e-12


@pytest.mark.parametrize(
    ("value", "words"),
    [(-1, "at least 0"), (5000, "at most 1,024"), (2.5, "fractional"),
     ("many", "must be a number, got the text 'many'")],
)  # fmt: skip
def test_hostile_counts_are_refused_naming_the_field(value, words):
    with pytest.raises(Exception) as raised:
        _instance(redundant_experts=[value])
    text = str(raised.value)
    assert "redundant_experts" in text and words in text


def test_copies_without_expert_parallelism_warn():
    instance = _instance(expert_parallel=[1], attention_data_parallel=[1])
    assert any("policy.redundant_experts" in w for w in input_warnings(instance))


def test_ep72_instance_solves_verifies_and_deploys_with_eplb_flags():
    """The only layout offered is SGLang's wide-EP decode layout (TP1 x DP72, EP72 over
    256 + 32 experts): the plan takes it, states the 32 copies beside ep, verifies, and
    each engine is told to hold them."""
    instance = _instance()
    plan = solve(instance)
    check = verify(instance, plan)
    assert check.ok, check.violations
    (pool,) = plan.replicas
    assert (pool.ep, pool.dp, pool.redundant_experts) == (72, 72, 32)
    assert pool.key.endswith("dp72ep72r32.unified") and "ep72+32" in pool.label
    (deployed,) = deploy_pools(instance, plan)
    sglang, vllm = sglang_command(deployed), vllm_command(deployed)
    assert sglang[sglang.index("--ep-num-redundant-experts") + 1] == "32"
    assert "--enable-eplb" in sglang and "--enable-eplb" in vllm
    assert json.loads(vllm[vllm.index("--eplb-config") + 1]) == {"num_redundant_experts": 32}
    balancer = trtllm_options(deployed)["moe_config"]["load_balancer"]
    assert balancer["num_slots"] == 256 + 32
    # The verifier rebuilds the memory from the plan's count: a plan claiming no copies
    # at EP72 is refused (256 experts over 72 ranks).
    no_copies = pool.model_copy(update={"redundant_experts": 0})
    wrong = plan.model_copy(update={"replicas": (no_copies,)})
    assert not verify(instance, wrong).ok


def test_more_copies_than_experts_are_refused_naming_the_field():
    """DeepSeek-V3 has 256 routed experts: 300 copies is more than one of each."""
    with pytest.raises(Exception) as raised:
        _instance(redundant_experts=[32, 300])
    text = str(raised.value)
    assert "policy.redundant_experts[1]" in text and "256 routed" in text


def test_cli_refuses_a_negative_count_without_a_traceback(run_cli, tmp_path):
    data = json.loads(json.dumps(EP72_INSTANCE))
    data["policy"]["redundant_experts"] = [-32]
    path = tmp_path / "ep72.yaml"
    path.write_text(json.dumps(data))
    result = run_cli("solve", str(path))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "policy.redundant_experts" in result.stderr and "Traceback" not in result.stderr


def test_perf_lays_out_ep72_with_redundant_experts(run_cli):
    args = ["perf", "-m", "deepseek-v3", "-g", "h100-sxm", "-p", "fp8", "-i", "2000", "-o", "500"]
    args += ["--tp", "1", "--dp", "72", "--ep", "72"]
    refused = run_cli(*args)
    assert refused.exit_code == ExitCode.BAD_INPUT
    assert "256 routed experts" in refused.stderr
    result = run_cli(*args, "--redundant-experts", "32", "--json")
    assert result.exit_code == ExitCode.OK
    data = json.loads(result.stdout)
    assert (data["ep"], data["redundant_experts"], data["gpus"]) == (72, 32, 72)


def test_kubernetes_annotation_carries_the_copies_back_through_fleet_import():
    """deploy --target k8s annotates each object with its pool's layout; fleet-import
    rebuilds the pool from it, so the 32 copies must be in it (EP72 without them is no
    layout of DeepSeek-V3)."""
    instance = _instance()
    plan = solve(instance)
    objects = kubernetes_objects(tuple(deploy_pools(instance, plan)))
    (pool,) = merged(pools_from_objects(objects))
    assert (pool.ep, pool.dp, pool.redundant_experts) == (72, 72, 32)
    assert pool.key == plan.replicas[0].key


def test_a_csv_fleet_states_its_copies():
    text = (
        "workload,region,gpu,precision,tp,pp,ep,dp,redundant_experts,replicas\n"
        "chat,us-east,h100-sxm,fp8,1,1,72,72,32,2\n"
    )
    (pool,) = pools_from_csv(text)
    # 2 replicas x tp 1 x pp 1 x dp 72 = 144 GPUs
    assert (pool.redundant_experts, pool.gpus) == (32, 144)
