"""A disaggregated pair at a closed-loop concurrency (models.serving.disaggregated): the
burst replay and the steady fixed point worked out by hand with constant step times, the
KV transfer of a real model, more decode workers, and the planner's pools of the
disaggregated instance where the two answer the same question."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.io.loading import load_instance
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.serving_inputs import traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.disaggregated import (
    DECODE,
    PREFILL,
    DecodeSide,
    PairLayout,
    PrefillSide,
    pair_at_concurrency,
    pair_sides,
    replay_pair,
    steady_pair,
)
from models.serving.frontier import operating_point
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, ServingContext, TrafficMix
from models.serving.replica_layout import kv_transfer_s

NO_LINK_CAP = 1e9
"""A link that never binds (requests/s)."""


def prefill_side(iteration_s: float, service_s: float, chunk: int = 1000, workers: int = 1):
    return PrefillSide(
        workers=workers,
        lanes_per_worker=1,
        chunk_tokens=chunk,
        service_s=service_s,
        own_s=service_s,
        prompt_scv=0.0,
        iteration_s=lambda tokens: iteration_s,
    )


def decode_side(iteration_s: float, seats: int, workers: int = 1):
    return DecodeSide(workers=workers, seats=seats, iteration_s=lambda batch: iteration_s)


def test_a_prefill_limited_burst_by_hand():
    """One prefill lane of 1,000 tokens at 0.1 s an iteration, two users with 1,000-token
    prompts and 3 output tokens, a 5 ms transfer, decode at 10 ms an iteration:
    u0 prefilled 0 -> 0.1, first token 0.105, decodes 0.105 -> 0.115 -> 0.125;
    u1 waits for the lane, 0.1 -> 0.2, first token 0.205, done 0.225.
    TTFT 0.105 and 0.205 (mean 0.155), TPOT (0.125 - 0.105) / 2 = 10 ms each;
    throughput 2 / 0.225; decode batch 1 for 4 iterations of 10 ms over 0.225 s.
    Caps: prefill 1 / 0.1 = 10 req/s, decode min(8, 2 / 1) = 2 seats: 2 / (2 x 0.01)
    = 100 req/s: prefill limits."""
    point = replay_pair(
        prefill_side(0.1, 0.1), decode_side(0.01, 8), 0.005, NO_LINK_CAP, 2, 1, 1000, 3
    )
    assert point.ttft_mean_s == pytest.approx((0.105 + 0.205) / 2)
    assert point.tpot_mean_s == pytest.approx(0.01)
    assert point.throughput_requests_per_s == pytest.approx(2 / 0.225)
    assert point.decode_batch == pytest.approx(4 * 0.01 / 0.225)
    assert point.caps[PREFILL] == pytest.approx(10.0)
    assert point.caps[DECODE] == pytest.approx(100.0)
    assert point.limit == PREFILL
    assert point.prefill_wait_mean_s == pytest.approx(0.155 - 0.1 - 0.005)
    assert not point.saturated


def test_a_decode_limited_burst_by_hand():
    """One decode seat, decode at 0.1 s an iteration, 3 output tokens (2 iterations), a
    lane of 2,000 tokens prefilling both 1,000-token prompts in one 10 ms iteration, no
    transfer time: both first tokens at 0.01; u0 seated 0.01 -> 0.21 (TPOT 0.1), u1
    waits for the seat, 0.21 -> 0.41, TPOT (0.41 - 0.01) / 2 = 0.2 (the wait counts
    against TPOT); mean 0.15. Caps: decode 1 seat / (2 x 0.1) = 5 req/s, prefill
    1 / 0.005 = 200: decode limits; two users for one seat: saturated."""
    point = replay_pair(
        prefill_side(0.01, 0.005, chunk=2000), decode_side(0.1, 1), 0.0, NO_LINK_CAP, 2, 1, 1000, 3
    )
    assert point.ttft_mean_s == pytest.approx(0.01)
    assert point.tpot_mean_s == pytest.approx((0.1 + 0.2) / 2)
    assert point.throughput_requests_per_s == pytest.approx(2 / 0.41)
    assert point.caps[DECODE] == pytest.approx(5.0)
    assert point.limit == DECODE
    assert point.saturated


def test_a_user_comes_back_after_its_decode():
    """One user, two requests: prefill 0 -> 0.1 (+ 0.005 transfer), decode 2 x 0.01 to
    0.125, the second request sent then: 0.125 -> 0.225 -> 0.230 -> 0.250. TTFT 0.105
    both times; 0.25 s for two requests."""
    point = replay_pair(
        prefill_side(0.1, 0.1), decode_side(0.01, 8), 0.005, NO_LINK_CAP, 1, 2, 1000, 3
    )
    assert point.ttft_mean_s == pytest.approx(0.105)
    assert point.throughput_requests_per_s == pytest.approx(2 / 0.25)


def test_the_steady_fixed_point_by_hand():
    """Prefill S = 0.1 s (fixed length: M/D/1, Allen-Cunneen W = rho S / (1 - rho) / 2),
    no transfer, decode 0.1 s an iteration for O - 1 = 2 tokens. At X = 5 req/s:
    rho = 0.5, W = 0.5 x 0.1 / 0.5 / 2 = 0.05 s, so C = 5 x (0.05 + 0.1 + 0.2) = 1.75
    users; the decode batch B = X (O-1) t / D = 5 x 0.2 = 1."""
    point = steady_pair(prefill_side(0.1, 0.1), decode_side(0.1, 1000), 0.0, NO_LINK_CAP, 1.75, 3)
    assert point.throughput_requests_per_s == pytest.approx(5.0, rel=1e-9)
    assert point.ttft_mean_s == pytest.approx(0.15, rel=1e-9)
    assert point.tpot_mean_s == pytest.approx(0.1)
    assert point.decode_batch == pytest.approx(1.0, rel=1e-9)
    # caps: prefill 1 / 0.1 = 10 req/s; decode at min(1000 seats, 1.75 users) = 1.75
    # sequences, 1.75 / (2 x 0.1) = 8.75 req/s: the decode side caps first
    assert point.caps[PREFILL] == pytest.approx(10.0)
    assert point.caps[DECODE] == pytest.approx(8.75)
    assert point.limit == DECODE


def test_steady_users_past_the_seats_wait_in_the_tpot():
    """One seat caps the decode at 1 / (2 x 0.1) = 5 req/s, where the pair holds 1.75
    users (above); 3.75 users leave 2 waiting 2 / 5 = 0.4 s for the seat, spread over
    the O - 1 = 2 tokens: TPOT 0.1 + 0.2."""
    point = steady_pair(prefill_side(0.1, 0.1), decode_side(0.1, 1), 0.0, NO_LINK_CAP, 3.75, 3)
    assert point.throughput_requests_per_s == pytest.approx(5.0)
    assert point.tpot_mean_s == pytest.approx(0.3)
    assert point.ttft_mean_s == pytest.approx(0.15)
    assert point.saturated and point.limit == DECODE


def _pair(prefill_workers, decode_workers, mix=None, tp=4, link=None):
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.3-70b")
    efficiency = efficiency_for(gpu, Precision.FP8)
    mix = mix or TrafficMix.fixed(4000, 300)

    def side(role):
        config = ReplicaConfig(gpu, llm, Precision.FP8, Precision.FP8, tp, 1, role)
        return ServingContext(config, mix, efficiency)

    return PairLayout(side(Role.PREFILL), side(Role.DECODE), prefill_workers, decode_workers, link)


def test_the_kv_transfer_of_a_4000_token_prompt():
    """Llama 3.3 70B, fp8 KV: 2 (K, V) x 80 layers x 8 KV heads x 128 x 1 byte = 163,840
    bytes a token, so 4,000 tokens are 655,360,000 bytes. A TP4 H100 worker's NICs: 4 x
    400 Gbit/s / 8 x 0.8 (scale-out fraction) = 160 GB/s, so 4.096 ms; given 25 GB/s,
    26.2144 ms."""
    report = pair_at_concurrency(_pair(2, 1), 1)
    assert report.kv_transfer_bytes == pytest.approx(4000 * 2 * 80 * 8 * 128)
    assert report.link_bytes_per_s == pytest.approx(4 * 400e9 / 8 * 0.8)
    assert report.kv_transfer_s == pytest.approx(655_360_000 / 160e9)
    given_link = pair_at_concurrency(_pair(2, 1, link=25e9), 1)
    assert given_link.kv_transfer_s == pytest.approx(0.0262144)
    assert given_link.link_given
    # a lone user: TTFT = its prefill + transfer, nothing queued
    assert report.point.ttft_mean_s == pytest.approx(
        report.prefill_s + report.kv_transfer_s, rel=0.02
    )
    assert report.gpus == 3 * 4


@settings(max_examples=12, deadline=None)
@given(
    prefill_workers=st.integers(1, 4),
    decode_workers=st.integers(1, 4),
    users=st.integers(1, 600),
    prompt=st.sampled_from([500, 4000]),
    output=st.sampled_from([50, 300]),
)
def test_more_decode_workers_never_lower_the_steady_throughput(
    prefill_workers, decode_workers, users, prompt, output
):
    """Steady users: one more decode worker spreads the same users' decoding thinner, so
    each iteration is no longer, and the throughput does not fall."""
    mix = TrafficMix.fixed(prompt, output)
    fewer = pair_at_concurrency(_pair(prefill_workers, decode_workers, mix), users, "steady")
    more = pair_at_concurrency(_pair(prefill_workers, decode_workers + 1, mix), users, "steady")
    assert more.point.throughput_requests_per_s >= fewer.point.throughput_requests_per_s * (
        1 - 1e-9
    )


BURST_LOCKSTEP_TOLERANCE = 0.2
"""A burst's users run in lockstep (fixed lengths, all started together), so the property
does not hold strictly there: when the decode workers split the users evenly (32 users
on 4 workers, 8 each) their waves stay in step and come back to the prefill queue
together, where 3 or 5 workers (uneven shares, unequal iterations) break the waves up.
Over 432 cases (8B and 70B on H100, 1,000/100, 4,000/300 and 200/400 tokens, 1-4
prefill workers, 8-128 users, 1-6 decode workers) one more decode worker lowered the
burst's throughput by up to 14.8%, always at 4 workers dividing the users. The steady
fixed point has no waves and is held to no drop at all."""


@pytest.mark.parametrize("users", [8, 64, 256])
def test_more_decode_workers_in_a_burst_lose_at_most_the_lockstep(users):
    """Within the lockstep's loss, and never past the smallest cap: the decode side's
    D B / ((O - 1) t_d(B)) is concave in B, so uneven batches carry less than even ones
    at C / D; a lane's partial chunks prefill slower than the full ones of X_p."""
    previous = 0.0
    for decode_workers in (1, 2, 3, 4):
        report = pair_at_concurrency(_pair(4, decode_workers), users, requests_per_user=3)
        throughput = report.point.throughput_requests_per_s
        assert throughput >= previous * (1 - BURST_LOCKSTEP_TOLERANCE)
        assert throughput <= min(report.point.caps.values()) * 1.01
        previous = max(previous, throughput)


def test_the_planners_disaggregated_pools_where_comparable():
    """The disaggregated instance's plan: prefill and decode pools of Llama 3.3 70B fp8.
    Where the pair and the planner answer the same question they agree:
    - the prefill cap X_p is the pool's offline prompts/s, P_w x q_p (the planner's
      compute rate r / P per worker);
    - the KV transfer is the planner's (`kv_transfer_s` of the prefill configuration);
    - at the decode pool's planned load (its share of the demand, 40 req/s over the
      pool), the mean decode iteration is the planner's operating point's step, the pair
      holding a sequence O - 1 iterations where the planner holds it O (so its batch is
      (O - 1) / O the planner's at the same rate: within 1% at O = 300);
    - with users without end, the steady pair runs at the decode seat ceiling:
      D x q_d (offline) x O / (O - 1)."""
    from solver.solve import solve

    instance = load_instance("instances/disaggregated.yaml")
    plan = solve(instance)
    workload = instance.workload("chat")
    pools = {pool.role: pool for pool in plan.replicas if pool.workload == "chat"}
    assert set(pools) == {Role.PREFILL, Role.DECODE}
    mix = traffic_mix(workload, instance.policy.prefix_affinity)
    gpu_of = instance.gpu_specs
    llm = instance.llm_specs[workload.model]

    def serving(pool):
        config = ReplicaConfig(
            gpu_of[pool.gpu], llm, pool.precision, pool.precision, pool.tp, pool.pp, pool.role
        )
        efficiency = efficiency_for(config.gpu, pool.precision, instance.efficiency)
        return ServingContext(config, mix, efficiency)

    pre, dec = serving(pools[Role.PREFILL]), serving(pools[Role.DECODE])
    p_count, d_count = pools[Role.PREFILL].count, pools[Role.DECODE].count
    layout = PairLayout(pre, dec, p_count, d_count)
    prefill, decode, kv_bytes, link, _ = pair_sides(layout)
    offline = {
        role: replica_capacity(s.config, mix, LatencyTargets(), s.efficiency, n)
        for role, s, n in ((Role.PREFILL, pre, p_count), (Role.DECODE, dec, d_count))
    }
    assert prefill.max_rate == pytest.approx(p_count * offline[Role.PREFILL].requests_per_s)
    mean_prompt = workload.prompt_tokens.mean_tokens
    # over the slower side's NICs (the pair's link is the smaller of the two)
    slower_s = max(kv_transfer_s(s.config, mean_prompt, s.efficiency) for s in (pre, dec))
    assert kv_bytes / link == pytest.approx(slower_s)
    output = mix.output_mean_tokens
    demand = workload.demand["us-east"].peak_requests_per_s
    planned = operating_point(dec, demand / d_count)
    batch = decode.batch_at(demand, round(output) - 1)
    assert batch == pytest.approx(planned.batch * (output - 1) / output, rel=0.01)
    assert decode.iteration_s(batch) == pytest.approx(planned.decode_step_s, rel=0.01)
    endless = pair_at_concurrency(layout, 100_000, "steady").point
    ceiling = d_count * offline[Role.DECODE].requests_per_s * output / (output - 1)
    assert endless.limit == DECODE and endless.saturated
    assert endless.throughput_requests_per_s == pytest.approx(
        min(ceiling, prefill.max_rate), rel=0.01
    )


def test_bad_pairs_are_refused():
    with pytest.raises(ValueError, match="prefill workers"):
        pair_at_concurrency(_pair(0, 1), 4)
    with pytest.raises(ValueError, match="whole users"):
        pair_at_concurrency(_pair(1, 1), 2.5)
    with pytest.raises(ValueError, match="two output tokens"):
        pair_at_concurrency(_pair(1, 1, TrafficMix.fixed(100, 1)), 2)
    assert math.isfinite(pair_at_concurrency(_pair(1, 1), 2.5, "steady").point.ttft_mean_s)
