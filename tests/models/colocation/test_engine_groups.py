"""One engine, several workloads (policy.colocation): multi-LoRA adapters of one base
(policy.multi_lora) and same-model merges, as group templates the program chooses and
the verifier recomputes.

Shapes: Llama 3.1 8B (h 4096, 32 heads x 128, 8 KV heads, MLP 14336, 32 layers), bf16 on
one H100, fixed 1000-token prompts and 200-token outputs, class-default efficiency."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.colocation.engine_group import EngineMember, engine_group, envelope_mix
from models.io.loading import validate_instance
from models.physics import catalog
from models.physics.efficiency import Efficiency
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix
from solver.candidates.table import build_candidates
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import workload

EFF = Efficiency()
H100 = catalog.gpu_catalog()["h100-sxm"]
LLAMA_8B = catalog.llm_catalog()["llama-3.1-8b"]
CONFIG = ReplicaConfig(H100, LLAMA_8B, Precision.BF16, Precision.BF16, tp=1, pp=1)
MIX = TrafficMix.fixed(1000, 200)
STRICT = LatencyTargets(ttft_p99_s=0.5, tpot_p99_s=0.050)
LOOSE = LatencyTargets(ttft_p99_s=2.0, tpot_p99_s=0.100)
PRICE = 2.0
HOURS = 730
h, q, kv, mlp, layers = 4096, 32 * 128, 8 * 128, 14336, 32
ADAPTER_BYTES_R16 = 16 * (7 * h + 2 * q + 2 * kv + 3 * mlp) * layers * 2  # rank 16, bf16


def _lone_rps(targets: LatencyTargets = STRICT) -> float:
    return replica_capacity(CONFIG, MIX, targets, EFF).requests_per_s


def _member(name, adapter, rate, targets=STRICT, mix=MIX, rank=16):
    return EngineMember(name, adapter, rank if adapter else None, mix, targets, rate)


def test_a_same_model_merge_is_one_replica_at_the_strictest_slo():
    # No adapter: no adapter bytes and a zero LoRA step cost, so the engine is one plain
    # replica of the base at the strictest members' targets with the (identical) mix:
    # C = q(strict), split in proportion to the loads 1 : 3.
    lone = _lone_rps(STRICT)
    group = engine_group(
        CONFIG, [_member("chat", None, 1.0, STRICT), _member("api", None, 3.0, LOOSE)], EFF
    )
    assert group.adapters == 0 and group.adapter_bytes_per_gpu == 0
    assert group.total_requests_per_s == pytest.approx(lone, rel=1e-9)
    assert group.capacity_requests_per_s == pytest.approx((lone * 1 / 4, lone * 3 / 4))
    assert _lone_rps(LOOSE) > lone  # the loose tenant alone would carry more


def test_adapters_are_held_once_each_and_cost_step_time():
    # Three rank-16 adapters over all linear layers: 16 x (7h + 2q + 2kv + 3I) x 32 layers
    # x 2 bytes = 80 MiB each, 240 MiB resident beside ONE copy of the 16 GB base.
    assert ADAPTER_BYTES_R16 == 80 * 2**20
    rate = _lone_rps() / 10
    lora = engine_group(CONFIG, [_member(w, f"{w}-8b", rate) for w in "abc"], EFF)
    merged = engine_group(CONFIG, [_member(w, None, rate) for w in "abc"], EFF)
    assert lora.adapters == 3
    assert lora.adapter_bytes_per_gpu == pytest.approx(3 * ADAPTER_BYTES_R16)
    # the same traffic without adapters carries more: every step reads the distinct
    # adapters in its batch and does x A B for every token
    assert lora.total_requests_per_s < merged.total_requests_per_s
    assert lora.load_scale > 1  # three tenths of a replica fit one engine


@settings(max_examples=6, deadline=None)
@given(adapters=st.integers(min_value=1, max_value=12))
def test_more_distinct_adapters_never_raise_the_capacity(adapters):
    # The same total traffic split over k or k + 1 adapters: E[D] only grows with k.
    total = _lone_rps() / 2
    few = engine_group(
        CONFIG, [_member(f"w{i}", f"m{i}", total / adapters) for i in range(adapters)], EFF
    )
    more = engine_group(
        CONFIG,
        [_member(f"w{i}", f"m{i}", total / (adapters + 1)) for i in range(adapters + 1)],
        EFF,
    )
    assert more.total_requests_per_s <= few.total_requests_per_s * (1 + 1e-9)


def test_the_envelope_mix_dominates_every_member():
    short = TrafficMix.fixed(500, 300)
    long = TrafficMix.fixed(2000, 100)
    env = envelope_mix([short, long])
    assert (env.prompt_mean_tokens, env.output_mean_tokens) == (2000, 300)
    assert (env.prompt_p99_tokens, env.output_p99_tokens) == (2000, 300)


def _instance(names, rate, multi_lora=True, same_model=False, ttft=(500,), tpot=(50,)):
    models = [{"name": "llama-3.1-8b"}]
    if not same_model:
        models += [{"name": f"{w}-8b", "base": "llama-3.1-8b", "rank": 16} for w in names]
    return validate_instance(
        {
            "name": "one-engine",
            "gpus": [{"name": "h100-sxm"}],
            "models": models,
            "regions": [
                {
                    "name": "east",
                    "supply": {"h100-sxm": {"max_gpus": 64, "price_per_gpu_hour": PRICE}},
                }
            ],
            "workloads": [
                workload(
                    w,
                    {"east": rate},
                    model="llama-3.1-8b" if same_model else f"{w}-8b",
                    ttft_p99_ms=ttft[i % len(ttft)],
                    tpot_p99_ms=tpot[i % len(tpot)],
                    prompt_tokens=1000,
                    output_tokens=200,
                )
                for i, w in enumerate(names)
            ],
            "policy": {
                "survive": "none",
                "tensor_parallel": [1],
                "colocation": True,
                "multi_lora": multi_lora,
                "buy_unit": "gpu",
            },
        }
    )


def test_five_adapters_share_one_engine_by_hand():
    # Five adapters at a fifth of a lone replica each: one engine carries all five (1 GPU)
    # where co-resident engines cannot (5 x 16 GB of weights + 5 reserves of 4 GB > 80 GB)
    # and dedicated pools take 5 GPUs: 1 x $2.00 x 730 h = $1,460/month.
    rate = _lone_rps() / 5 * 0.8
    names = ["a", "b", "c", "d", "e"]
    inst = _instance(names, rate)
    plan = solve(inst)
    engines = [e for e in plan.replicas if e.shared_engine]
    assert plan.total_gpus == 1 and plan.cost_per_month == pytest.approx(1 * PRICE * HOURS)
    assert len(engines) == 1 and set(engines[0].workloads) == set(names)
    a = [m.requests_per_s_per_replica for m in engines[0].members]
    assert all(x >= rate for x in a)  # each member's share covers its peak
    assert plan.tiering.gpus_dedicated == 5
    assert verify(inst, plan).ok
    off = solve(_instance(names, rate, multi_lora=False))
    assert not any(e.shared_engine for e in off.replicas)
    assert off.cost_per_month >= plan.cost_per_month


def test_two_tenants_of_one_model_merge_at_the_strictest_slo():
    # chat (TTFT 500 ms, TPOT 50 ms) and api (2000 ms, 100 ms) of the same model, a
    # tenth each: one pool at chat's targets carries both (1 GPU instead of 2).
    rate = _lone_rps() / 10
    inst = _instance(["chat", "api"], rate, same_model=True, ttft=(500, 2000), tpot=(50, 100))
    plan = solve(inst)
    merged = [e for e in plan.replicas if e.shared_engine]
    assert plan.total_gpus == 1 and len(merged) == 1
    assert merged[0].workloads == ("chat", "api")
    # C = q of chat's own lone replica (its targets, the same mix), split 1:1
    (strict,) = [c.requests_per_s for c in build_candidates(inst).of("chat")]
    total = sum(m.requests_per_s_per_replica for m in merged[0].members)
    assert total == pytest.approx(strict, rel=1e-9)
    (loose,) = [c.requests_per_s for c in build_candidates(inst).of("api")]
    assert loose > strict
    assert verify(inst, plan).ok


def test_the_verifier_rejects_an_engine_that_claims_too_much():
    rate = _lone_rps() / 5 * 0.8
    inst = _instance(["a", "b", "c"], rate)
    plan = solve(inst)
    engine = next(e for e in plan.replicas if e.shared_engine)
    members = tuple(
        m.model_copy(update={"requests_per_s_per_replica": 1.5 * m.requests_per_s_per_replica})
        for m in engine.members
    )
    doctored = plan.model_copy(
        update={
            "replicas": tuple(
                e.model_copy(update={"members": members}) if e is engine else e
                for e in plan.replicas
            )
        }
    )
    check = verify(inst, doctored)
    assert not check.ok
    assert any(
        v.requirement.startswith("groups[") and "within the strictest SLO" in v.message
        for v in check.violations
    )


def test_adapters_share_an_engine_only_with_multi_lora():
    rate = _lone_rps() / 5 * 0.8
    inst = _instance(["a", "b", "c"], rate)
    plan = solve(inst)
    off = _instance(["a", "b", "c"], rate, multi_lora=False)
    check = verify(off, plan)
    assert not check.ok
    assert any("policy.multi_lora" in v.message for v in check.violations)
