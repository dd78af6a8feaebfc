"""The p99 TPOT as a reply's life (`models.serving.tail.reply_life`): the exceedance law by hand,
a prompt's whole prefill work by hand, the atom that keeps a short reply at the decode
step, and properties of `BatchModel.tpot_p99_s` (never below the mean gap, rising with
the prompt length at a fixed batch). The simulator's side: tests/models/serving/
test_pool_slo.py and tests/bench/test_short_reply_tpot_bench.py."""

import itertools
import math
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.traffic import TokenDistribution
from models.serving.batch_model import BatchModel
from models.serving.capacity import replica_capacity
from models.serving.queueing import erlang_c
from models.serving.replica import LatencyTargets, MixTokens, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import replica_step_model
from models.serving.tail import reply_life
from models.serving.tail.reply_life import ReplyLife, exceedance
from tests.paths import REPO

FP8 = Precision.FP8


def _phi_above(z: float) -> float:
    """P(Z > z), Z standard normal."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def test_the_exceedance_by_hand():
    """Two prompts expected (count 2), each s of mean 50 ms and E[s^2] = 2 x 50^2 ms^2,
    no backlog. P(N >= 1) = 1 - e^-2 = 0.864665; given it the work has mean
    0.1 / 0.864665 = 0.115651 s and second moment (2 x 0.005 + 0.1^2) / 0.864665 =
    0.0231303 s^2, variance 0.0231303 - 0.115651^2 = 0.0097551; lognormal sigma^2 =
    ln(1 + 0.0097551 / 0.115651^2) = 0.547744. At the room of its mean, z = sigma / 2:
    P = 0.864665 x P(Z > 0.370047) = 0.864665 x 0.355676 = 0.307540."""
    some = 1 - math.exp(-2.0)
    mean = 0.1 / some
    variance = (2 * 0.005 + 0.1**2) / some - mean**2
    sigma = math.sqrt(math.log1p(variance / mean**2))
    by_hand = some * _phi_above(sigma / 2)
    assert by_hand == pytest.approx(0.307540, abs=1e-6)
    assert exceedance(mean, 2.0, 0.1, 2 * 0.005, 0.0, 0.0) == pytest.approx(by_hand, rel=1e-12)


def test_the_backlog_alone_by_hand():
    """No prompt arrives (count 0): only the backlog U, waiting with probability C = 0.5
    and exponential beyond of mean E[U] / C = 20 ms / 0.5 = 40 ms: P(U > 40 ms) =
    0.5 e^-1 = 0.183940."""
    assert exceedance(0.040, 0.0, 0.0, 0.0, 0.020, 0.5) == pytest.approx(0.5 * math.exp(-1))


def test_a_subnormal_backlog_share_adds_nothing_and_is_no_nan():
    """The two prompts of `test_the_exceedance_by_hand` (0.307540) beside a backlog that
    waits with probability C = 1e-310 (subnormal: 2 / C overflows to inf) for 4 ms when
    it waits, E[U] = 4e-313 s: Var U = 2 E[U] (E[U] / C) - E[U]^2 = 2 x 4e-313 x 0.004
    = 3.2e-315 s^2, nothing beside the work's, so P is 0.307540 again. The variance as
    E[U]^2 (2 / C - 1) was 0 x inf = NaN, and so was the exceedance."""
    share = 1e-310
    assert 2.0 / share == math.inf  # the regime: C below 2 / DBL_MAX
    some = 1 - math.exp(-2.0)
    mean = 0.1 / some
    p = exceedance(mean, 2.0, 0.1, 2 * 0.005, 0.004 * share, share)
    assert p == pytest.approx(0.307540, abs=1e-6)
    # no prompt: the backlog alone, C e^-(room / 4 ms) = 1e-310 x e^-10
    alone = exceedance(0.040, 0.0, 0.0, 0.0, 0.004 * share, share)
    assert alone == pytest.approx(share * math.exp(-10.0), rel=1e-6)


@example(share=1e-310, wait_s=0.004, count=2.0)
@example(share=5e-324, wait_s=0.004, count=1e-9)
@given(
    share=st.floats(0.0, 1.0),
    wait_s=st.floats(1e-6, 10.0),
    count=st.floats(0.0, 1e4),
)
@settings(max_examples=200, deadline=None)
def test_the_exceedance_is_a_probability(share, wait_s, count):
    """Property: P(U + A > room) is in [0, 1] for every backlog share C in [0, 1]
    (subnormal ones included), every conditional wait E[U] / C and prompt count (each
    prompt s of mean 50 ms, E[s^2] = 2 x 50^2 ms^2), at rooms around the mean work."""
    for room_s in (1e-6, 0.05, 1.0, 100.0):
        p = exceedance(room_s, count, count * 0.05, count * 0.005, wait_s * share, share)
        assert 0.0 <= p <= 1.0, (room_s, p)


def test_a_reply_at_vanishing_load_in_a_pool_of_30_is_below_its_tail():
    """growth-horizon's month 11 (70B on H100 TP2 FP8, prompts 1,500 / p99 6,000): the
    capacity search's first point, batch 1e-9, in a pool of 30 replicas. A reply lives
    m t(B) = 210 x 18.36 ms = 3.86 s and meets a prompt with probability
    1 - e^-(1.82e-10 x 3.86) = 7e-10; its backlog waits with C = Erlang C(30, 30 rho),
    rho = 1.82e-10 x 0.1035 s = 1.9e-11, about 1e-310 (subnormal). So the exceedance at
    the mean gap is ~7e-10, 1% below the tail in both limits, and the p99 gap is t(B).
    It was NaN (`test_a_subnormal_backlog_share_adds_nothing_and_is_no_nan`): bisection
    happened to read NaN as "not above" and returned t(B) (1 + 1e-14), a regula falsi
    returned NaN, the point missed its TPOT and the pool of 30 or 31 'cannot meet the
    SLO at any load' (q = 0): the hour verifier, which pools 12 warm replicas with 19
    started after lose=eu-west, found them carrying 0 where the program credited
    12 q(12) + 19 q'(1) = 107.8 requests/s, and solve ended in exit 70."""
    life = ReplyLife(
        iterations=210.3,
        batch=1e-9,
        mean_s=0.018356585509682,
        decode_s=0.018356585509337,
        decode_slope_s=6.82e-5,
        full_lane_s=0.646,
        rate=1.816e-10,
        work_s=0.1035,
        work_square_s2=0.02004,
        pool=30,
    )
    backlog = life.backlog()
    assert 0 < backlog[1] < 2.0 / sys.float_info.max  # subnormal: the regime
    assert backlog[1] == erlang_c(30, 30 * life.prefill_share)
    for pooled in (False, True):
        assert life._excess(life.mean_s, backlog, pooled) == pytest.approx(-0.01, abs=1e-8)
    assert life.tail_s() == life.mean_s


def _life(**fields) -> ReplyLife:
    """A reply of 99 iterations at B = 10: t_0 = 10 ms, t(B) = 20 ms (rho = 0.5 at
    lambda = 10 prompts/s of 50 ms each), a full lane 200 ms, a lone replica."""
    base = dict(
        iterations=99.0,
        batch=10.0,
        mean_s=0.020,
        decode_s=0.010,
        decode_slope_s=0.0,
        full_lane_s=0.200,
        rate=10.0,
        work_s=0.050,
        work_square_s2=2 * 0.050**2,
        pool=1.0,
    )
    return ReplyLife(**(base | fields))


def test_a_short_reply_that_meets_a_prompt_in_under_one_percent_is_the_decode_step():
    """A 2-token reply (one gap) at 0.1 prompts/s with no backlog: it lives t = 7.9 ms
    and meets a prompt with probability 1 - e^-(0.1 x 0.0079) = 0.08% < 1%, so its p99
    gap is the mean gap (the fuzz28 case: the normal law at the tail batch said 50 ms
    where the simulator measures 7.87)."""
    life = _life(
        iterations=1.0, batch=0.001, mean_s=0.0079, decode_s=0.0078, rate=0.1, work_s=0.001
    )
    assert life.backlog() == pytest.approx((0.1 * 2 * 0.05**2 / 2 / (1 - 0.0001), 0.0001))
    assert life.tail_s() == pytest.approx(0.0079, rel=1e-12)


def test_the_tail_solves_its_exceedance():
    """The lone replica's p99 gap tau: at it, P(U + A(T) > T - m t_0) = 1% with T = 99 tau
    and lambda T prompts (no batch growth: t_0' = 0); above the mean gap, under the full
    lane."""
    life = _life()
    tau = life.tail_s()
    assert 0.020 < tau < 0.200
    mean_u, share_u = life.backlog()
    life_s = 99 * tau
    p = exceedance(
        life_s - 99 * 0.010, 10.0 * life_s, 0.5 * life_s, 10 * life_s * 0.005, mean_u, share_u
    )
    assert p == pytest.approx(0.01, rel=1e-6)


def test_a_nan_exceedance_is_refused_not_read_as_below_the_tail(monkeypatch):
    """A NaN exceedance is neither above the tail nor below it: the bisection read it as
    "not above" and returned the optimistic answer, t(B) = 20 ms for `_life()` (what hid
    the subnormal-C NaN of growth-horizon until a pool came out at q = 0). Now the
    bisection names it."""
    monkeypatch.setattr(reply_life, "exceedance", lambda *args: math.nan)
    with pytest.raises(AssertionError, match="NaN exceedance"):
        _life().tail_s()


def test_without_assertions_a_nan_exceedance_is_the_conservative_side():
    """`python -O` drops the assertion: a NaN then reads as above the tail, so the p99 gap
    is the lane cap, the longest it may be: `_life()` has t_0' = 0, so the full lane,
    200 ms (not t(B) = 20 ms)."""
    code = (
        "import math\n"
        "from models.serving.tail import reply_life\n"
        "from tests.models.serving.test_reply_life import _life\n"
        "reply_life.exceedance = lambda *args: math.nan\n"
        "print(repr(_life().tail_s()))\n"
    )
    run = subprocess.run(
        [sys.executable, "-O", "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert float(run.stdout) == pytest.approx(0.200, rel=1e-12)


def test_a_pool_takes_the_larger_of_its_two_limits():
    """A pool of 4: the whole prompts at the 1/n feedback share, and the pool's work
    evened over 4 lanes with the whole feedback; the p99 is the larger, below the lone
    replica's (the same lambda)."""
    lone, pool = _life(), _life(pool=4.0)
    backlog = pool.backlog()
    limits = [pool._tail_s(backlog, pooled) for pooled in (False, True)]
    assert pool.tail_s() == max(limits)
    assert pool.tail_s() <= lone.tail_s()


def test_a_larger_pool_never_carries_less_per_replica():
    """The pooling ladder credits a pool of n >= P the capacity of P
    (solver.program.families.pooling: q never falls as the pool grows). Llama 3.1 70B on
    an H100 TP2 at FP8, prompts 1,500 / p99 4,500 tokens, replies of mean 3 / p99 4,000
    (most replies a few tokens, a rare long one), 800 ms TTFT and 50 ms TPOT: the evened
    limit once took the pool's n lambda T prompts, so its chance that a short reply meets
    no prompt, e^-(n lambda T), vanished as n grew, and q(n) rose to 3.16 requests/s at
    n = 12 and fell to 0.87 at n = 64; the plan credited the step and the verifier found
    the pool short (exit 70). A replica meets its own lambda T prompts at every n."""
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-70b"), FP8, FP8, 2, 1, Role.UNIFIED)
    mix = _mix(1500, 4500, output=3, output_p99=4000)
    efficiency = efficiency_for(config.gpu, FP8)
    targets = LatencyTargets(0.8, 0.05)
    sizes = (1, 2, 4, 8, 12, 16, 32, 64)
    q = [replica_capacity(config, mix, targets, efficiency, n).requests_per_s for n in sizes]
    assert all(b >= a for a, b in itertools.pairwise(q)), dict(zip(sizes, q, strict=True))
    assert q[-1] > 3.16


@settings(max_examples=12, deadline=None)
@given(
    model=st.sampled_from([("llama-3.1-8b", 1), ("llama-3.1-70b", 2)]),
    output=st.sampled_from([(2, 2), (3, 8), (5, 40), (3, 4000), (20, 60), (300, 900)]),
    prompt=st.sampled_from([(200, 600), (1500, 4500), (4000, 16000)]),
    tpot_s=st.sampled_from([0.03, 0.05]),
)
def test_the_capacity_per_replica_never_falls_as_the_pool_grows(model, output, prompt, tpot_s):
    """Property, the pooling ladder's premise: q(n) per replica is non-decreasing over
    n = 1..64 (H100 at FP8; short, spread and long replies; short and long prompts). The
    p99 gap at a fixed load need not be (a reply that meets a prompt in 1-2% of lives
    has its p99 near the median of the work it meets, which rises as the pool evens the
    work's spread: 20.05 -> 20.10 ms from n = 2 to 4 at one prompt a second), but the
    capacity the program credits is; a scan of the 72 combinations found no fall."""
    name, tp = model
    config = ReplicaConfig(gpu("h100-sxm"), llm(name), FP8, FP8, tp, 1, Role.UNIFIED)
    mix = _mix(*prompt, output=output[0], output_p99=output[1])
    targets = LatencyTargets(0.8 if prompt[0] < 4000 else 2.0, tpot_s)
    efficiency = efficiency_for(config.gpu, FP8)
    q = [replica_capacity(config, mix, targets, efficiency, n).requests_per_s
         for n in (1, 2, 4, 8, 16, 32, 64)]  # fmt: skip
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(q)), q


POOL_SCAN = {
    # (model, TP, reply mean / p99, prompt mean / p99, TPOT target): the four whose
    # q(n + 1) / q(n) came closest to falling in the bench's scan of all 72
    # combinations (tests/bench/test_pool_monotone_scan_bench.py), flat steps of
    # 1 - 7e-13 where a cap binds
    "70b-replies-20-long-prompts": ("llama-3.1-70b", 2, (20, 60), (4000, 16000), 0.03),
    "70b-replies-3-spread": ("llama-3.1-70b", 2, (3, 8), (1500, 4500), 0.05),
    "70b-replies-2": ("llama-3.1-70b", 2, (2, 2), (1500, 4500), 0.03),
    "8b-replies-2-long-prompts": ("llama-3.1-8b", 1, (2, 2), (4000, 16000), 0.05),
}


@pytest.mark.parametrize("case", sorted(POOL_SCAN))
def test_the_capacity_per_replica_never_falls_at_any_pool_size(case):
    """The started-replica credit, warm n x q(n) + started k x q'(1), and the ladder's
    steps (a pool of n >= P credited q(P)) are sound only if q is non-decreasing at every
    n, not only at the powers of two the property above samples: every n in 1..64 for
    the four configurations closest to a fall (under 1 s each)."""
    name, tp, output, prompt, tpot_s = POOL_SCAN[case]
    config = ReplicaConfig(gpu("h100-sxm"), llm(name), FP8, FP8, tp, 1, Role.UNIFIED)
    mix = _mix(*prompt, output=output[0], output_p99=output[1])
    targets = LatencyTargets(0.8 if prompt[0] < 4000 else 2.0, tpot_s)
    efficiency = efficiency_for(config.gpu, FP8)
    q = [replica_capacity(config, mix, targets, efficiency, n).requests_per_s for n in range(1, 65)]
    falls = {
        n + 1: (a, b) for n, (a, b) in enumerate(itertools.pairwise(q), 1) if b < a * (1 - 1e-9)
    }
    assert falls == {}
    assert q[-1] > q[0] > 0  # the pool lifts each of them


def _model(mix: TrafficMix, pool: float = 1, role: Role = Role.UNIFIED) -> BatchModel:
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1, role)
    steps = replica_step_model(config, efficiency_for(config.gpu, FP8))
    return BatchModel(steps, MixTokens.of(mix), role, 0.0, 0.0, pool)


def _mix(prompt: float, prompt_p99: float, output: float = 300, output_p99: float = 300):
    return TrafficMix.of_lengths(
        TokenDistribution(mean=prompt, p99=prompt_p99),
        TokenDistribution(mean=output, p99=output_p99),
    )


def test_a_prompt_past_the_lane_is_one_lump_of_work():
    """A fixed 2L-token prompt (L the lane beside B = 10 decode tokens, 8,192 - 10) is two
    full-lane iterations of the same reply: s = 2 (t_L - t_0) and E[s^2] = 4 (t_L - t_0)^2
    (independent chunks would give 2 (t_L - t_0)^2 to the sum of squares)."""
    batch = 10.0
    model = _model(_mix(2 * 8182, 2 * 8182))
    lane = model.lane_tokens(batch)
    assert lane == 8192 - 10
    decode_s = model.decode_only_s(batch)
    lane_s = model.steps.iteration_s(batch, model.mix.context, lane, 2 * lane * 0.5)
    first, second = model.prompt_work(batch)
    assert first == pytest.approx(2 * (lane_s - decode_s), rel=1e-12)
    assert second == pytest.approx(4 * (lane_s - decode_s) ** 2, rel=1e-12)


def test_a_decode_replica_is_its_batch_spread():
    """No prompts ride in a decode replica: its p99 TPOT is the decode step at the tail
    batch B_hi (the mean gap is the decode step)."""
    model = _model(_mix(4000, 16000), role=Role.DECODE)
    batch = 40.0
    assert model.tpot_p99_s(batch) == pytest.approx(
        model.decode_only_s(model.batch_high(batch)), rel=1e-12
    )


@given(st.floats(0.5, 80.0), st.sampled_from([1, 4, 37]))
@settings(max_examples=30, deadline=None)
def test_the_p99_tpot_never_falls_below_the_mean_gap(batch, pool):
    model = _model(_mix(4000, 16000, 100, 400), pool)
    assert model.tpot_p99_s(batch) >= model.step_s(batch) * (1 - 1e-12)


@given(st.floats(1.0, 60.0), st.floats(200, 3000), st.floats(1.05, 3.0))
@settings(max_examples=30, deadline=None)
def test_the_p99_tpot_grows_with_the_prompt_length_at_a_fixed_batch(batch, prompt, longer):
    """The same batch with longer prompts (same spread): as many prompts an iteration,
    each more work, so a higher p99 TPOT."""
    short, long = (_model(_mix(p, 3 * p)) for p in (prompt, prompt * longer))
    assert long.tpot_p99_s(batch) >= short.tpot_p99_s(batch) * (1 - 1e-9)
