"""The period rounds held to the time left (solver.decompose.period_passes): each pass's
block solves get their part of a share of it, and a priced block its limit stopped
without a solution leaves the rounds going."""

import math
import time
from dataclasses import replace
from types import SimpleNamespace
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.decompose import by_period, period_passes
from solver.decompose.by_period import _Rounds
from solver.decompose.period_passes import MIN_BLOCK_S, Master, pass_limit
from solver.decompose.period_split import split
from solver.program.lp import SolveResult, Termination
from solver.settings import Deadline, SolveSettings
from tests.solver.decompose.test_by_period import EXACT, _base, _program


def _left(seconds: float) -> SolveSettings:
    """Settings whose run has `seconds` left of a 100 s limit."""
    started = time.monotonic() - (100.0 - seconds)
    return replace(SolveSettings(time_limit_s=100.0), deadline=Deadline(started, 100.0))


def test_a_pass_ends_within_its_share_of_the_time_left():
    """30 s left, 24 blocks two at a time: 12 waves; a third of 30 s over 12 waves is
    30 / 3 / 12 = 0.833 s a solve."""
    with patch.object(period_passes, "machine_threads", lambda: 2):
        limit = pass_limit(_left(30.0), 24, 1 / 3)
    assert limit == pytest.approx(30.0 / 3 / 12, rel=1e-2)


def test_a_block_solve_gets_at_least_the_floor():
    """240 blocks two at a time in 30 s: 120 waves, 30 / 3 / 120 = 0.083 s, below the
    floor: MIN_BLOCK_S."""
    with patch.object(period_passes, "machine_threads", lambda: 2):
        assert pass_limit(_left(30.0), 240, 1 / 3) == MIN_BLOCK_S


def test_a_run_without_a_limit_holds_no_pass():
    assert pass_limit(replace(SolveSettings(), time_limit_s=None), 24, 1 / 3) is None


class _Stopping:
    """HiGHS, except that the priced program of block 0 stops at its time limit with no
    solution."""

    def __init__(self, stopped: str):
        self.inner, self.stopped = get_backend("highs"), stopped
        self.name, self.capabilities = self.inner.name, self.inner.capabilities
        self.limits: list[float | None] = []

    def is_available(self):
        return self.inner.is_available()

    def version(self):
        return self.inner.version()

    def run(self, lp, settings, start=None):
        self.limits.append(settings.time_limit_s)
        if lp.name == self.stopped:
            return SolveResult(Termination.TIME_LIMIT, self.name, "0", 0.0)
        return self.inner.run(lp, settings, start=start)


def test_a_priced_block_stopped_without_a_solution_is_left_without_a_cut():
    """Block 0's priced solve ends at its limit with nothing: the pass goes on, every
    other priced block has its cut and its solution, block 0 has neither."""
    program = _program(_base())
    parts = split(program.lp)
    run = _Rounds(program.lp, parts, get_backend("highs"), EXACT.started())
    backend = _Stopping(run._free(0, {}).name)
    run.backend = backend
    prices = {i: {o.gpus: 1.0 for o in parts.offers} for i in range(len(parts.blocks))}
    assert run.priced_blocks(prices)
    run.take_priced()  # held until the held fleet's pass has run (by_period's module text)
    assert {i for i, _, _ in run.cuts} == set(range(1, len(parts.blocks)))
    assert not run.known[0] and all(run.known[i] for i in range(1, len(parts.blocks)))


def test_each_priced_solve_is_held_to_its_part_of_the_pass():
    """EXACT's 120 s, n blocks one at a time (threads patched to 1): each priced solve
    may run a third of 120 s over n waves."""
    program = _program(_base())
    parts = split(program.lp)
    backend = _Stopping("none")
    settings = EXACT.started()
    run = _Rounds(program.lp, parts, backend, settings)
    prices = {i: {o.gpus: 1.0 for o in parts.offers} for i in range(len(parts.blocks))}
    with patch.object(period_passes, "machine_threads", lambda: 1):
        expected = by_period.FIRST_PASS_SHARE * settings.remaining_s() / len(parts.blocks)
        assert run.priced_blocks(prices)
    assert backend.limits == [pytest.approx(expected, rel=1e-2)] * len(parts.blocks)


class _Refusing:
    """A backend that must not be asked."""

    name = "refusing"

    def run(self, lp, settings, start=None):
        raise AssertionError(f"{lp.name} passed to the backend")


def test_a_relaxation_that_cannot_end_in_its_share_is_not_solved(monkeypatch):
    """120 s left: a quarter is 30 s; at 1 s a nonzero the program's n nonzeros need
    n s > 30 s, so no LP is passed and every block has no prices (the priced pass is
    skipped)."""
    program = _program(_base())
    parts = split(program.lp)
    nonzeros = program.lp.size()["nonzeros"]
    assert nonzeros > 30
    monkeypatch.setattr(period_passes, "LP_S_PER_NONZERO", 1.0)
    prices, bound = period_passes.lp_prices(program.lp, parts, _Refusing(), EXACT.started())
    assert prices == [{} for _ in parts.blocks] and bound == -math.inf


def _cut_by_terms(offers, levels: dict[str, int], saving: dict[str, float], bound: float):
    """The cut at a point term by term, as by_period's module text writes it: for each
    level k above k^ of each offer, min(F^, s (k - k^)) where that is above 0."""
    terms = {}
    for offer in offers:
        s = saving.get(offer.gpus, 0.0)
        for k in range(levels[offer.gpus] + 1, offer.highest + 1):
            drop = min(bound, s * (k - levels[offer.gpus]))
            if drop > 0:
                terms[(offer.gpus, k)] = drop
    return terms


@examples(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 6),
            st.integers(0, 12),
            st.one_of(
                st.just(0.0),
                st.just(math.inf),
                st.floats(-50.0, 5_000.0, allow_nan=False, allow_infinity=False),
            ),
        ),
        min_size=1,
        max_size=4,
    ),
    st.floats(-100.0, 20_000.0, allow_nan=False, allow_infinity=False),
)
def test_a_cut_at_a_point_is_the_term_by_term_minimum(offers, bound):
    """Master._cut fills every level from the first where s (k - k^) reaches F^ with F^
    itself: the same terms, values and order as the minimum taken level by level (a
    saving of 0 or below, or a bound of 0 or below, gives no term; an infinite saving
    gives F^ at every level above k^)."""
    made = [
        SimpleNamespace(gpus=f"committed[r{i}]", highest=level + above)
        for i, (level, above, _) in enumerate(offers)
    ]
    levels = {o.gpus: level for o, (level, _, _) in zip(made, offers, strict=True)}
    saving = {o.gpus: s for o, (_, _, s) in zip(made, offers, strict=True)}
    state = SimpleNamespace(parts=SimpleNamespace(offers=made), saving=[saving], cuts=[])
    Master._cut(state, 0, levels, bound)
    index, rhs, terms = state.cuts[0]
    expected = _cut_by_terms(made, levels, saving, bound)
    assert (index, rhs) == (0, bound)
    assert list(terms.items()) == list(expected.items())


def test_a_cut_by_hand():
    """F^ = 1,000, s = 300 a level above k^ = 2, up to level 7: levels 3..5 lower the
    bound by 300, 600, 900, levels 6 and 7 by F^ (1,200 and 1,500 capped at 1,000)."""
    offer = SimpleNamespace(gpus="committed[r1,h100]", highest=7)
    state = SimpleNamespace(parts=SimpleNamespace(offers=[offer]), saving=[{offer.gpus: 300.0}])
    state.cuts = []
    Master._cut(state, 0, {offer.gpus: 2}, 1_000.0)
    drops = {3: 300.0, 4: 600.0, 5: 900.0, 6: 1_000.0, 7: 1_000.0}
    assert state.cuts[0][2] == {(offer.gpus, k): drop for k, drop in drops.items()}
