"""Prefix affinity at a pool's real size: the minimum pool its hit rate needs, the spill
of hot prefixes, what the plan states per pool (tiers, hit rate) and what the verifier
recomputes. Hand arithmetic first, then the shipped affinity instance."""

import itertools
import json

import pytest

from models.io.loading import load_instance
from models.physics.catalog import gpu, llm
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.kv_tiers import KvTier, TierName
from models.physics.precision import Precision
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.prefix_kv import pool_kv
from models.serving.prefix_routing import (
    PREFIX_HBM_SHARE,
    affinity_hit_pool,
    affinity_hits,
    affinity_min_replicas,
    imbalance,
    pool_hits,
    random_hits,
    replica_loads,
    routed,
)
from models.serving.replica import LatencyTargets, ReplicaConfig, ServingContext, TrafficMix
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import INSTANCES

FP8 = Precision.FP8
EFF = Efficiency(prefill_flops_fraction=0.5, decode_flops_fraction=0.5, hbm_fraction=0.8)
AFFINITY = INSTANCES / "prefix-affinity-doc-qa.yaml"


def _hbm(capacity_tokens: float) -> tuple[KvTier, ...]:
    return (KvTier(TierName.HBM, capacity_tokens, 0.0, 1e-5),)


def test_affinity_hit_rate_needs_its_minimum_pool():
    # 10 customers of 10,000 tokens, 5% of the requests each; a 20,000-token mean prompt.
    # HBM of 60,000 KV tokens offers 0.5 x 60,000 = 30,000 to prefixes: 3 customers.
    tokens, shares, prompt = (10_000.0,) * 10, (0.05,) * 10, 20_000.0
    tiers = _hbm(60_000)
    assert PREFIX_HBM_SHARE == 0.5
    random_hit = 3 * 0.05 * 10_000 / 20_000  # 0.075: a random replica holds 3 of 10
    assert random_hits(tokens, shares, prompt, tiers).hit_rate == pytest.approx(random_hit)
    # Affinity homes each on k = ceil(0.05 n) = 1 replica (n <= 20); the wrap-around
    # needs up to n - 1 extra copies of the longest (10,000): n replicas hold
    # (n x 30,000 - (n - 1) x 10,000) / 10,000 customers = 3, 5, 7, 9, 11 -> all 10 at n = 5.
    for n, held in ((1, 3), (2, 5), (3, 7), (4, 9)):
        expected = held * 0.05 * 10_000 / 20_000
        assert pool_hits(tokens, shares, prompt, tiers, n).hit_rate == pytest.approx(expected)
    assert affinity_min_replicas(tokens, shares, tiers) == 5
    limit_hit = 10 * 0.05 * 10_000 / 20_000  # 0.25: each customer on its home replica
    for n in (5, 8, 16):
        assert pool_hits(tokens, shares, prompt, tiers, n).hit_rate == pytest.approx(limit_hit)


def test_replica_loads_of_a_pool_with_free_traffic_are_level():
    # The same 10 customers on 4 replicas: pieces of 5% packed largest first give
    # 15%, 15%, 10%, 10%; the free 50% fills the two low ones to 15% (10% of it) and
    # the remaining 40% spreads over all four: 25% each, balanced, nothing spilled.
    assert replica_loads((0.05,) * 10, 4) == pytest.approx((0.25,) * 4)
    assert imbalance((0.05,) * 10, 4) == pytest.approx(1.0)


def test_a_prefix_on_every_request_does_not_steer_the_router():
    # A system prompt on every request is homed on all n replicas; the documents it comes
    # with (75% of requests, 150 x 0.5%) steer, the other 25% go anywhere: balanced.
    shares = (1.0,) + (0.005,) * 150
    assert imbalance(shares, 8) == pytest.approx(1.0)
    assert routed(shares, 8) == tuple(range(1, 151))


def test_hot_prefixes_are_balanced_by_their_extra_copies():
    # Three customers of 30% each (1,000-token prefixes, a 2,000-token prompt) on 2
    # replicas, k = ceil(0.3 x 2) = 1 home each. Split evenly over its homes, LPT puts
    # 60% on one replica and 30% on the other (the free 10% lifts it to 40%): I = 1.2.
    tokens, shares, prompt = (1000.0,) * 3, (0.3,) * 3, 2000.0
    assert replica_loads(shares, 2) == pytest.approx((0.6, 0.4))
    assert imbalance(shares, 2) == pytest.approx(0.6 * 2 / 1.0)
    # Wrap-around instead, in replica units: [0, 0.6) on r1, [0.6, 1.2) on r1 and r2 (its
    # extra copy), [1.2, 1.8) on r2, the free 0.2 on r2: both carry exactly 1.0. The
    # pool holds 3 x 1,000 + (2 - 1) x 1,000 = 4,000 tokens: 2,000 per replica.
    tiers = _hbm(4000)  # 2 x 4,000 x 0.5 = 4,000 of room: all three and the copy
    held = affinity_hits(tokens, shares, prompt, tiers, 2)
    assert held.placement.hbm_tokens == pytest.approx((3 * 1000 + 1 * 1000) / 2)
    assert held.hit_rate == pytest.approx(3 * 0.3 * 1000 / 2000)  # 0.45
    assert affinity_min_replicas(tokens, shares, tiers) == 2
    # With 3,500 tokens of HBM the extra copy is what does not fit at n = 2
    # (2 x 1,750 = 3,500 < 4,000): the third customer waits for n = 3
    # (3 x 1,750 = 5,250 >= 3,000 + 2 x 1,000).
    smaller = _hbm(3500)
    assert pool_hits(tokens, shares, prompt, smaller, 2).hit_rate == pytest.approx(0.3)
    assert affinity_min_replicas(tokens, shares, smaller) == 3
    assert pool_hits(tokens, shares, prompt, smaller, 3).hit_rate == pytest.approx(0.45)
    # The large-pool limit charges each replica sum s_i t_i + the longest steering prefix.
    limit = affinity_hit_pool(tokens, shares, prompt, tiers)
    assert limit.placement.hbm_tokens == pytest.approx(3 * 0.3 * 1000 + 1000)


def _doc_qa() -> tuple[ReplicaConfig, TrafficMix, TrafficMix, LatencyTargets, Efficiency]:
    instance = load_instance(AFFINITY)
    workload = instance.workloads[0]
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.3-70b"), FP8, FP8, 4, 1)
    efficiency = efficiency_for("h100-sxm", FP8, instance.efficiency)
    return (
        config,
        traffic_mix(workload, True),
        traffic_mix(workload, False),
        latency_targets(workload.slo),
        efficiency,
    )


def test_affinity_hits_grow_with_the_pool_up_to_its_minimum():
    config, affinity, random_mix, targets, efficiency = _doc_qa()
    lone = replica_capacity(config, affinity, targets, efficiency, 1)
    assert (
        lone.requests_per_s
        == replica_capacity(config, random_mix, targets, efficiency, 1).requests_per_s
    )
    # 2,000 + 150 x 0.5% x 20,000 = 17,000 of a 24,000-token prompt, once every document
    # has a home: from the affinity minimum on.
    limit_hit = (2000 + 150 * 0.005 * 20_000) / 24_000
    hits = [pool_kv(ServingContext(config, affinity, efficiency), n).hit_rate for n in range(1, 9)]
    n_min = 1 + next(i for i, h in enumerate(hits) if h == pytest.approx(limit_hit))
    assert n_min > 1
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(hits))
    assert hits[0] < limit_hit
    rates = [
        replica_capacity(config, affinity, targets, efficiency, n).requests_per_s
        for n in range(1, 9)
    ]
    assert all(a <= b * (1 + 1e-9) for a, b in itertools.pairwise(rates))
    assert rates[n_min - 1] > rates[0]
    assert pool_kv(ServingContext(config, affinity, efficiency), n_min).tiers_used == (
        TierName.HBM,
    )


def test_plan_states_tiers_and_hit_rate_and_verify_recomputes_them():
    instance = load_instance(AFFINITY)
    plan = solve(instance)
    assert verify(instance, plan).ok
    (pool,) = plan.replicas
    assert pool.kv_tiers_used == ("hbm",)
    assert pool.prefix_hit_rate == pytest.approx(17 / 24)
    # A plan claiming more hits than its pool gets is refused, naming the pool.
    claimed = pool.model_copy(update={"prefix_hit_rate": 0.9})
    bad = plan.model_copy(update={"replicas": (claimed,)})
    messages = [v.message for v in verify(instance, bad).violations]
    assert any("prefix hit rate of 0.9" in m for m in messages), messages
    tiers = pool.model_copy(update={"kv_tiers_used": ("hbm", "ssd")})
    messages = [
        v.message
        for v in verify(instance, plan.model_copy(update={"replicas": (tiers,)})).violations
    ]
    assert any("['ssd']" in m for m in messages), messages


def test_verify_refuses_a_pool_smaller_than_its_affinity_needs():
    # One TP4 replica fewer than the affinity minimum carries only random routing's rate:
    # a plan that loads it as if affinity held fails the capacity check.
    instance = load_instance(AFFINITY)
    config, affinity, _, targets, efficiency = _doc_qa()
    n_min = next(
        n
        for n in range(1, 64)
        if pool_kv(ServingContext(config, affinity, efficiency), n).hit_rate > 0.7
    )
    small = n_min - 1
    as_if = replica_capacity(config, affinity, targets, efficiency, n_min).requests_per_s
    real = replica_capacity(config, affinity, targets, efficiency, small).requests_per_s
    assert small * real < small * as_if
    demand = small * (real + as_if) / 2  # between what it carries and what it claims
    workload = instance.workloads[0]
    level = workload.demand["us-east"].model_copy(update={"peak_requests_per_s": demand})
    shrunk = instance.model_copy(
        update={"workloads": [workload.model_copy(update={"demand": {"us-east": level}})]}
    )
    plan = solve(shrunk)
    (pool,) = plan.replicas
    stated = pool.model_copy(
        update={"tp": 4, "count": small, "gpus": small * 4, "limit": None,
                "requests_per_s_per_replica": None, "prefix_hit_rate": None,
                "kv_tiers_used": None}
    )  # fmt: skip
    bad = plan.model_copy(update={"replicas": (stated,), "total_gpus": small * 4})
    result = verify(shrunk, bad)
    assert not result.ok
    assert any("demand" in v.requirement or "capacity" in v.requirement for v in result.violations)


def test_solve_table_shows_kv_tiers_and_hit_rate(run_cli, tmp_path):
    out = tmp_path / "plan.json"
    result = run_cli("solve", str(AFFINITY), "--json", str(out))
    assert result.exit_code == 0, result.stderr
    assert "KV tiers" in result.stdout and "hit rate" in result.stdout
    assert "70.8%" in result.stdout
    (entry,) = json.loads(out.read_text())["replicas"]
    assert entry["kv_tiers_used"] == ["hbm"]
    assert entry["prefix_hit_rate"] == pytest.approx(17 / 24)


def test_solve_table_without_a_prefix_cache_has_no_kv_columns(run_cli):
    result = run_cli("solve", str(INSTANCES / "unified.yaml"))
    assert result.exit_code == 0, result.stderr
    assert "KV tiers" not in result.stdout


def test_perf_states_the_affinity_minimum_pool(run_cli):
    args = [
        "perf", "-m", "llama-3.3-70b", "-g", "h100-sxm", "-p", "fp8", "--tp", "8",
        "-i", "24000", "-o", "400", "--ttft-p99-ms", "3000", "--tpot-p99-ms", "60",
        "--prefix-tokens", "20000", "--prefix-share", "0.75", "--kv-tiers",
    ]  # fmt: skip
    plain = run_cli(*args, "--json")
    assert plain.exit_code == 0, plain.stderr
    assert "affinity_min_replicas" not in json.loads(plain.stdout)
    result = run_cli(*args, "--prefix-affinity", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["affinity_min_replicas"] >= 1
    table = run_cli(*args, "--prefix-affinity")
    assert "pools of at least" in table.stdout
