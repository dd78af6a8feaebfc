"""The p99 gap's root (`ReplyLife._tail_s`: Brent's method on log(P / 1%), then the
48 halvings replayed around its bracket) against the 48-halving log bisection alone, the
log of the exceedance Brent's method interpolates on (`log_exceedance`): by hand where the
exceedance is closed, finite where it underflows; and a pool's evened limit solved only
where it may be the larger of the two."""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.serving.tail import reply_life
from models.serving.tail.reply_life import ReplyLife, exceedance, log_exceedance
from tests.models.serving.test_reply_life import _life

STEP = ReplyLife(
    iterations=499.0,
    batch=6.2366295221508965,
    mean_s=0.06762149568204656,
    decode_s=0.0673471806674492,
    decode_slope_s=0.0017579679882318263,
    full_lane_s=0.46259491734935676,
    rate=0.18445701205649953,
    work_s=0.021992248667574568,
    work_square_s2=0.0004836590014564354,
    pool=math.inf,
    lane_busy=0.016402129789755082,
)
"""An unlimited pool's evened work (10 x 20 x 6 region loss at the defaults): its spread
is work_square / inf = 0, so the pooled limit's P(U + A > room) steps from ~1 to 0
within ~1e-9 of the gap; the root sits 9.0e-9 above t(B)."""
NOISY = ReplyLife(
    iterations=499.0,
    batch=1816.0936524714366,
    mean_s=1.381274896222612,
    decode_s=0.7119112477480026,
    decode_slope_s=0.0003891463674168191,
    full_lane_s=3.0619118002107006,
    rate=2.62959047100317,
    work_s=0.18428665492104546,
    work_square_s2=0.03396157118198849,
    pool=16,
    lane_busy=0.9863634446517996,
)
"""A pool of 16 (10 x 20 x 6 region loss at the defaults) whose evened limit meets 6,231
prompts, 1,148 s of work in a room of 1,157 s, both growing with the gap: the exceedance
reads +2.9e-13 and -2.6e-13 alternately over 1e-13 of its 4.758 s root, and the
bisection's root is 8e-12 below the sign change Brent's method finds."""
LOGGED = ReplyLife(
    iterations=499.0,
    batch=7.873829610727204,
    mean_s=0.05799706003531907,
    decode_s=0.05618978743137316,
    decode_slope_s=0.00013293865633573796,
    full_lane_s=2.6723942301256383,
    rate=0.27152512923697153,
    work_s=0.11476452331935834,
    work_square_s2=0.013170895812719543,
    pool=32,
    lane_busy=0.046298888896623924,
)
"""A pool of 32 (10 x 20 x 6 region loss at the defaults) whose evened limit's P falls
below 1e-8 at points Brent's method visits."""


def _bisected(life: ReplyLife, pooled: bool) -> float:
    """The root as main found it: 48 halvings of [t(B), lane cap] in its log."""
    backlog = life.backlog()
    low, high = life.mean_s, life._lane_cap_s(pooled)
    if high <= low or life._excess(low, backlog, pooled) <= 0:
        return low
    if not life._excess(high, backlog, pooled) <= 0:
        return high
    for _ in range(48):
        middle = math.sqrt(low * high)
        if life._excess(middle, backlog, pooled) <= 0:
            high = middle
        else:
            low = middle
    return high


def _evaluations(life: ReplyLife, pooled: bool, monkeypatch) -> tuple[float, int]:
    """(the root, the exceedances it took)."""
    calls = [0]
    real = ReplyLife._excess

    def counted(self, *args):
        calls[0] += 1
        return real(self, *args)

    with monkeypatch.context() as patch:
        patch.setattr(ReplyLife, "_excess", counted)
        root = life._tail_s(life.backlog(), pooled)
    return root, calls[0]


def test_the_log_exceedance_by_hand():
    """test_reply_life's case by hand: count 2, each prompt 50 ms and E[s^2] = 2 x 50^2
    ms^2, no backlog, room the conditional mean 0.115651 s: P = 0.307540, log P =
    -1.179150."""
    some = 1 - math.exp(-2.0)
    mean = 0.1 / some
    logged = log_exceedance(mean, 2.0, 0.1, 2 * 0.005, 0.05, 0.005, 0.0, 0.0)
    assert logged == pytest.approx(math.log(0.307540), abs=1e-5)
    assert math.log(0.307540) == pytest.approx(-1.179150, abs=1e-6)


def test_the_log_exceedance_of_the_backlog_alone_by_hand():
    """test_reply_life's backlog alone: C = 0.5, one whole prompt of 50 ms, E[s^2] =
    2 x 50^2 ms^2, at a room of 50 ms: P = 0.169302, log P = -1.776071."""
    logged = log_exceedance(0.050, 0.0, 0.0, 0.0, 0.050, 2 * 0.050**2, 0.5, 0.0)
    assert logged == pytest.approx(-1.776071, abs=1e-5)
    assert math.log(0.169302) == pytest.approx(-1.776071, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(
    room=st.floats(1e-3, 10.0),
    count=st.floats(0.0, 1e4),
    prompt=st.floats(1e-3, 1.0),
    spread=st.floats(0.0, 4.0),
    share=st.floats(0.0, 1.0),
    extra=st.floats(0.0, 100.0),
)
def test_the_log_exceedance_is_the_log_of_the_exceedance(room, count, prompt, spread, share, extra):
    """Where P is a normal float, log_exceedance is log P to 1e-6 (the two share P(U + A
    > 0) and z; past z = 20 the tail's series is within 4e-9 of the erfc). Prompts of mean
    `prompt` and squared cv `spread`, `count` of them arriving, the backlog queued with
    probability C = `share`, 1 + Poisson(`extra`) whole prompts when it is."""
    square = (1.0 + spread) * prompt**2
    arguments = (room, count, count * prompt, count * square, prompt, square, share, extra)
    p = exceedance(*arguments)
    if p < 1e-300:
        return
    assert log_exceedance(*arguments) == pytest.approx(math.log(p), abs=1e-6, rel=1e-6)


def test_the_log_exceedance_stays_finite_and_falling_where_p_underflows():
    """1,000 prompts of 0.1 ms each with no spread (the variance floor, 1e-9 of the mean),
    no backlog: past its mean (0.1 s) P underflows to 0 within a relative 1e-7, its log
    keeps falling (-z^2 / 2, z ~ 1e2 per 1e-7)."""
    rooms = [0.1 * (1 + k * 1e-7) for k in range(1, 6)]
    arguments = (1e3, 0.1, 0.0, 1e-4, 1e-8, 0.0, 0.0)
    assert all(exceedance(r, *arguments) == 0.0 for r in rooms)
    logs = [log_exceedance(r, *arguments) for r in rooms]
    assert all(math.isfinite(x) for x in logs)
    assert all(a > b for a, b in itertools.pairwise(logs))


def test_no_prompt_at_all_is_a_log_of_minus_infinity():
    """No arrival and no backlog: P = 0 exactly, its log -inf."""
    assert exceedance(0.1, 0.0, 0.0, 0.0, 0.05, 0.005, 0.0, 0.0) == 0.0
    assert log_exceedance(0.1, 0.0, 0.0, 0.0, 0.05, 0.005, 0.0, 0.0) == -math.inf


@pytest.mark.parametrize(
    ("life", "pooled", "most"),
    [
        (_life(), False, 34),
        (_life(pool=4.0), False, 34),
        (_life(pool=4.0), True, 34),
        (_life(decode_slope_s=1e-4, pool=16.0), True, 34),
        (LOGGED, True, 34),
        (NOISY, True, 34),
        (NOISY, False, 34),
        (STEP, False, 34),
        (STEP, True, 100),
    ],
)
def test_the_root_is_the_bisections_to_the_bit(life, pooled, most, monkeypatch):
    """The root is the 48-halving bisection's, to the bit (the halvings replayed: a
    midpoint further than NOISE outside Brent's bracket told by it, a nearer one
    evaluated), in at most 34 exceedances where the bisection takes 50 (Brent's ~7, the
    replay's ~19: from 1e-9 of the gap to the halvings' ~1e-14). `NOISY` took a root
    8e-12 off the bisection's with NOISE 1e-11. `STEP` takes ~90: its P is ~1 on one side
    and a log of -1e19 on the other, which leaves Brent's method steps of its tolerance."""
    root, calls = _evaluations(life, pooled, monkeypatch)
    assert root == _bisected(life, pooled)
    assert life._excess(root, life.backlog(), pooled) <= 0
    assert calls <= most


def test_the_noisy_root_needs_the_noise_band(monkeypatch):
    """`NOISY` with NOISE 1e-11 and Brent's bracket 1e-14 wide (first31's): the
    bisection's root is 1.2e-13 below the one the replay finds (its sign change 8e-12
    below Brent's bracket), so a band of 1e-11 around the bracket tells a midpoint wrong."""
    monkeypatch.setattr(reply_life, "NOISE", 1e-11)
    monkeypatch.setattr(reply_life, "TAIL_REL_TOL", 1e-14)
    root = NOISY._tail_s(NOISY.backlog(), True)
    assert root != _bisected(NOISY, True)
    assert root / _bisected(NOISY, True) - 1 == pytest.approx(1.2e-13, rel=0.1)


def test_the_log_margin_takes_fewer_exceedances(monkeypatch):
    """`LOGGED`: where P falls below 1e-8, its log (not P - 1% ~ -1%, flat) lets Brent's
    method interpolate: 27 exceedances, 40 without."""
    assert _evaluations(LOGGED, True, monkeypatch)[1] == 27
    monkeypatch.setattr(reply_life, "log_exceedance", lambda *args: -math.inf)
    assert _evaluations(LOGGED, True, monkeypatch)[1] == 40


@pytest.mark.parametrize(
    ("fields", "roots"),
    [
        ({"pool": 4.0}, 1),  # the whole prompts' limit the larger: 31.6 ms against 30.3
        ({"pool": 16.0, "work_square_s2": 20 * 0.05**2}, 1),  # 62.5 ms against 38.7
        ({"pool": 4.0, "decode_slope_s": 5e-4}, 2),  # the evened limit's: 43.9 ms, 32.5
        ({"pool": 4.0, "decode_slope_s": 2e-4}, 2),  # the evened limit's: 33.3 ms, 31.9
    ],
)
def test_a_pool_solves_its_evened_limit_only_where_it_may_be_the_larger(fields, roots, monkeypatch):
    """`tail_s` is the larger of the two limits' roots; where the evened limit's
    exceedance is at or below the tail just below the first limit's root (NOISE below)
    already, its own root is earlier, and it is not solved (one root, not two: 19,079 of
    the 35,226 pools of chat-3region and 10 x 20 x 6 region loss at the defaults)."""
    life = _life(**fields)
    backlog = life.backlog()
    limits = [life._tail_s(backlog, pooled) for pooled in (False, True)]
    calls = [0]
    real = ReplyLife._tail_s

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ReplyLife, "_tail_s", counted)
    assert life.tail_s() == max(limits)
    assert calls[0] == roots


def test_a_pool_at_the_mean_gap_is_not_asked_below_it(monkeypatch):
    """A capacity search's first point (batch 1e-9, an unlimited pool; 10 x 20 x 6 region
    loss at the defaults): t(B) is the decode step, so below t(B) the reply has no room
    (P = 1), and both limits' roots are t(B). The evened limit is asked at t(B), not
    NOISE below it: one root, not two (3,063 such pools there)."""
    life = ReplyLife(
        iterations=300.19977504018283,
        batch=1e-09,
        mean_s=0.01835658550959767,
        decode_s=0.018356585509338986,
        decode_slope_s=6.994027985593454e-05,
        full_lane_s=0.6462179768114358,
        rate=1.3619090536706212e-10,
        work_s=0.10347447840360909,
        work_square_s2=0.020043960310833095,
        pool=math.inf,
        lane_busy=1.6592172080720502e-11,
    )
    backlog = life.backlog()
    assert life._excess(life.mean_s * (1 - reply_life.NOISE), backlog, True) > 0.98
    calls = [0]
    real = ReplyLife._tail_s

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ReplyLife, "_tail_s", counted)
    assert life.tail_s() == life.mean_s
    assert calls[0] == 1
