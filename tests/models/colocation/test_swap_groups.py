"""Swapped tails offered to the program (policy.colocation): the coldest models share one
GPU with one weight slot, the others paged in from host memory on demand
(`models.colocation.swap_group`, `solver.colocation.swap_templates`), and the verifier's own check
of them.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.colocation.shared_layout import Member, SharedLayout
from models.colocation.swap import (
    HOST_LINK_FRACTION,
    PCIE_GEN5_X16_GB_S,
    cold_probabilities_lru,
    cold_probability_keep_alive,
    host_link_gb_s,
    swap_in_s,
)
from models.colocation.swap_group import SWAP_BUSY_MAX, evaluate_swapped_group
from models.io.loading import validate_instance
from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.memory import weight_bytes_per_gpu
from models.physics.precision import Precision
from models.schema.serving_inputs import traffic_mix
from models.serving.replica import LatencyTargets
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import workload

QWEN_32B = llm("qwen3-32b")
H100 = gpu("h100-sxm")
EFFECTIVE_GEN5_BYTES_PER_S = PCIE_GEN5_X16_GB_S * 1e9 * HOST_LINK_FRACTION  # 50.4 GB/s


def test_swap_time_of_an_8b_fp8_model_over_pcie_gen5_by_hand():
    llama = llm("llama-3.1-8b")
    # FP8 keeps the linear layers at 1 byte, the two untied vocab matrices and the norms
    # at 2 bytes: params 8,030,261,248 = linear 6,979,321,856 + vocab 2 x 128,256 x 4,096
    # (1,050,673,152) + norms 32 x 2 x 4,096 + 4,096 (266,240).
    vocab_params = 2 * 128_256 * 4_096
    norm_params = 32 * 2 * 4_096 + 4_096
    linear_params = 8_030_261_248 - vocab_params - norm_params
    fp8_bytes = linear_params * 1 + (vocab_params + norm_params) * 2
    assert fp8_bytes == 9_081_200_640
    assert weight_bytes_per_gpu(llama, Precision.FP8, 1) == pytest.approx(fp8_bytes, rel=1e-9)
    # PCIe Gen5 x16: 63 GB/s per direction, 80% achieved by pinned copies = 50.4 GB/s.
    seconds = swap_in_s(fp8_bytes, host_link_gb_s(H100))
    assert seconds == pytest.approx(fp8_bytes / (63e9 * 0.8), rel=1e-12)
    assert seconds == pytest.approx(0.1802, abs=1e-4)


def test_probability_of_cold_by_hand():
    # Keep-alive 120 s at one request per minute: exp(-(1/60) x 120) = exp(-2) = 13.5%.
    assert cold_probability_keep_alive(1 / 60, 120) == pytest.approx(math.exp(-2))
    # One LRU slot, rates lambda and 2 lambda: with x = exp(-lambda T_C), Che's equation
    # (1 - x) + (1 - x^2) = 1 gives x^2 + x - 1 = 0, x = (sqrt 5 - 1) / 2 = 0.618: the
    # colder model is cold 61.8% of its requests, the hotter x^2 = 38.2%.
    golden = (math.sqrt(5) - 1) / 2
    assert cold_probabilities_lru([0.01, 0.02], 1) == pytest.approx([golden, golden**2])


def _instance(ttft_p99_ms: float, rate: float = 0.01):
    """Two very cold fine-tunes of Qwen3 32B at BF16 on H100s: each alone fits one GPU
    (65.5 GB of weights), the two together do not (131 GB > 80 GB)."""
    return validate_instance(
        {
            "name": "two-cold-32b",
            "gpus": [{"name": "h100-sxm"}],
            "models": [
                {"name": f"{w}-32b", "base": "qwen3-32b", "weight_precisions": ["bf16"]}
                for w in ("a", "b")
            ],
            "regions": [
                {
                    "name": "east",
                    "supply": {"h100-sxm": {"max_gpus": 16, "price_per_gpu_hour": 2.0}},
                }
            ],
            "workloads": [
                workload(
                    w, {"east": rate}, model=f"{w}-32b", ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=100
                )
                for w in ("a", "b")
            ],
            "policy": {
                "survive": "none",
                "tensor_parallel": [1],
                "colocation": True,
                "buy_unit": "gpu",
            },
        }
    )


def _swap_32b_s() -> float:
    return weight_bytes_per_gpu(QWEN_32B, Precision.BF16, 1) / EFFECTIVE_GEN5_BYTES_PER_S


def test_two_cold_models_with_loose_ttft_share_one_gpu_by_swapping():
    weights = weight_bytes_per_gpu(QWEN_32B, Precision.BF16, 1)
    assert 2 * weights > H100.hbm_bytes > weights  # no co-residence: only swapping shares
    swap_s = _swap_32b_s()
    assert swap_s == pytest.approx(1.30, abs=0.01)  # 65.5 GB / 50.4 GB/s
    inst = _instance(ttft_p99_ms=5000)
    plan = solve(inst)
    assert verify(inst, plan).ok
    [group] = [e for e in plan.replicas if e.shared]
    assert group.swapped_weights and group.count == 1 and group.gpus == 1
    assert plan.total_gpus == 1
    # Capacity: equal rates on one slot are cold half the time (2 (1 - e^-lambda T) = 1),
    # so the GPU copies for rho = 2 x lambda x 1/2 x swap_s = lambda swap_s <= 5%: each
    # member's a = 0.05 / 1.30 s = 0.0384 requests/s (bisection keeps the feasible side).
    ceiling = SWAP_BUSY_MAX / swap_s
    for m in group.members:
        assert ceiling * (1 - 2**-9) <= m.requests_per_s_per_replica <= ceiling


def test_a_tight_ttft_keeps_the_cold_models_apart():
    # A cold request waits its own swap and at most one other in progress: 2 x 1.30 s =
    # 2.6 s > 1 s, so no swapped group; each model gets its own GPU.
    assert 2 * _swap_32b_s() > 1.0
    inst = _instance(ttft_p99_ms=1000)
    plan = solve(inst)
    assert verify(inst, plan).ok
    assert not any(e.shared for e in plan.replicas)
    assert plan.total_gpus == 2


def test_the_verifier_rejects_a_swapped_group_whose_member_cannot_absorb_the_swap():
    plan = solve(_instance(ttft_p99_ms=5000))
    # The same plan against a 2 s target on b: its p99 bound, warm p99 + 2.6 s, breaks it.
    tight = _instance(ttft_p99_ms=5000).model_copy(deep=True)
    workloads = [
        w.model_copy(update={"slo": w.slo.model_copy(update={"ttft_p99_ms": 2000})})
        if w.name == "b"
        else w
        for w in tight.workloads
    ]
    tight = tight.model_copy(update={"workloads": workloads})
    check = verify(tight, plan)
    assert not check.ok
    problems = [v.message for v in check.violations if v.requirement.startswith("groups[")]
    assert any(p.startswith("b: p99 TTFT") and "breaks the 2000 ms target" for p in problems)
    assert not any(p.startswith("a:") for p in problems)


def test_the_verifier_rejects_a_swapped_group_that_swaps_too_often():
    inst = _instance(ttft_p99_ms=5000)
    plan = solve(inst)
    [group] = [e for e in plan.replicas if e.shared]
    doubled = tuple(
        m.model_copy(update={"requests_per_s_per_replica": 2 * m.requests_per_s_per_replica})
        for m in group.members
    )
    replicas = tuple(
        e.model_copy(update={"members": doubled}) if e is group else e for e in plan.replicas
    )
    check = verify(inst, plan.model_copy(update={"replicas": replicas}))
    assert any("swapping weights in" in v.message for v in check.violations)


def test_a_swapped_group_stated_as_co_resident_overflows_hbm():
    inst = _instance(ttft_p99_ms=5000)
    plan = solve(inst)
    replicas = tuple(
        e.model_copy(update={"swapped_weights": False}) if e.shared else e for e in plan.replicas
    )
    check = verify(inst, plan.model_copy(update={"replicas": replicas}))
    assert not check.ok


@settings(max_examples=15, deadline=None)
@given(st.floats(0.001, 0.02), st.floats(0.001, 0.02), st.floats(0.1, 1.0))
def test_cold_probability_is_scale_free_and_every_cold_member_pays_the_wait(rate_a, rate_b, s):
    """P(cold) does not move when every rate scales (Che's T_C scales by 1/s), and a cold
    member's p99 TTFT bound is at least its warm p99 plus its own swap (down-closure and the
    TTFT rule of models.colocation.swap_group)."""
    layout = SharedLayout(H100, Precision.BF16, Precision.BF16, 1, 1)
    efficiency = efficiency_for(H100, Precision.BF16)
    targets = LatencyTargets(ttft_p99_s=5.0, tpot_p99_s=0.1)
    mix = traffic_mix(_instance(5000).workloads[0], False)
    members = [Member(n, QWEN_32B, mix, targets, r) for n, r in (("a", rate_a), ("b", rate_b))]
    full = evaluate_swapped_group(layout, members, efficiency)
    scaled = evaluate_swapped_group(layout, [m.scaled(s) for m in members], efficiency)
    assert scaled.cold_probability == pytest.approx(full.cold_probability, rel=1e-6)
    assert scaled.swap_busy_fraction <= full.swap_busy_fraction + 1e-15
    for verdict, own_swap in zip(full.verdicts, full.swap_s, strict=True):
        assert verdict.ttft_p99_s >= own_swap
