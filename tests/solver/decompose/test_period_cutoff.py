"""A day's choice that cannot beat the plan in hand ends after its priced pass
(solver.decompose.by_period's `cutoff`, period_split.priced_bound, day_choice): the
bound by hand, its validity against the whole program's optimum, and the answer with a
cutoff the plan already beats is the answer without one."""

import math
from unittest.mock import patch

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.decompose import by_period
from solver.decompose.by_period import solve_periods
from solver.decompose.period_split import Held, Offer, Split, priced_bound, split
from solver.program.lp import LinearProgram, SolveResult, Termination, Variable
from solver.time import day_choice
from tests.solver.decompose.test_by_period import DAYS, EXACT, _base, _data, _program


def test_the_priced_bound_by_hand():
    """One offer of 8-GPU levels 0..2 at $10 a GPU and $5 a server: c = 8 x 10 + 5 = 85
    a level. Two priced cuts, theta_0 >= 100 - (50 z1 + 100 z2) and theta_1 >= 60 -
    (40 z1 + 80 z2): 160 + min(0, 85 - 90, 170 - 180) = 160 - 10 = 150."""
    lp = LinearProgram("by-hand")
    lp.variables = {"gpus": Variable("gpus", 0.0, 16.0), "servers": Variable("servers", 0.0, 2.0)}
    lp.objective = {"gpus": 10.0, "servers": 5.0}
    offer = Offer("gpus", "servers", per_level=8, lowest=0, highest=2)
    cuts = [
        (0, 100.0, {("gpus", 1): 50.0, ("gpus", 2): 100.0}, {}),
        (1, 60.0, {("gpus", 1): 40.0, ("gpus", 2): 80.0}, {}),
    ]
    assert math.isclose(priced_bound(lp, Split((offer,), ()), cuts), 150.0)
    # no cut: each theta_b >= 0 and the lowest level's price, 0
    assert priced_bound(lp, Split((offer,), ()), []) == 0.0


def _priced(lp):
    """The rounds' priced cuts of `lp` (its priced pass, as solve_by_period runs it)."""
    parts = split(lp)
    run = by_period._Rounds(lp, parts, get_backend("highs"), EXACT.started())
    prices, _ = by_period.lp_prices(lp, parts, run.backend, run.settings)
    assert run.priced_blocks(dict(enumerate(prices)))
    return priced_bound(lp, parts, run.priced_cuts)


@examples(max_examples=4, deadline=None)
@given(r1=st.sampled_from([15.0, 40.0, 90.0]), r2=st.sampled_from([10.0, 30.0]), **DAYS)
def test_the_priced_bound_is_at_most_the_optimum(
    r1, r2, shape, reserved_share, h200, cap, survive, buy_unit
):
    """A lower bound: never above the whole program's optimum (proved within 1e-6)."""
    data = _data({"r1": r1, "r2": r2}, shape, reserved_share, h200, cap, survive, buy_unit, None)
    program = _program(data)
    if split(program.lp) is None:
        return
    whole = get_backend("highs").run(program.lp, EXACT.started())
    if whole.termination is not Termination.OPTIMAL:
        return
    assert _priced(program.lp) <= whole.objective + 1e-5 * abs(whole.objective)


def test_a_cutoff_below_the_bound_ends_before_the_held_pass_and_one_above_changes_nothing():
    """With a held fleet (here none bought: every block at the lowest levels, renting
    nothing first). Cutoff 1% under the priced bound: INFEASIBLE (no plan below it),
    the held fleet's pass never runs. Cutoff at the optimum: the answer without one."""
    program = _program(_base())
    backend = get_backend("highs")
    bound = _priced(program.lp)
    held = []
    solve_held = by_period._Rounds.solve_held
    fleet = lambda: Held({}, {})  # noqa: E731
    with patch.object(by_period._Rounds, "solve_held", lambda *a: held.append(a) or solve_held(*a)):
        cut = solve_periods(program.lp, backend, EXACT.started(), fleet, cutoff=0.99 * bound)
        assert cut.termination is Termination.INFEASIBLE and "no plan below" in cut.message
        assert not cut.values and not held
        alone = solve_periods(program.lp, backend, EXACT.started(), fleet)
        above = solve_periods(program.lp, backend, EXACT.started(), fleet, cutoff=alone.objective)
    assert len(held) == 2  # the two that ran their rounds
    assert above.termination is alone.termination is Termination.OPTIMAL
    assert above.values == alone.values and above.message == alone.message


def test_each_choice_after_the_first_is_cut_off_at_the_cheapest_plan_so_far():
    """day_choice hands the first choice no cutoff and each later one the cheapest plan's
    cost; a choice cut off (INFEASIBLE) is not kept."""
    lp = LinearProgram("choices")
    cutoffs = []
    costs = iter([100.0, 120.0])

    def solve(fixed, backend, settings, fleet, start, cutoff=None, parts=None):
        del fixed, backend, settings, fleet, start, parts
        cutoffs.append(cutoff)
        cost = next(costs)
        if cutoff is not None and cost > cutoff:
            return SolveResult(Termination.INFEASIBLE, "fake", "0", 0.0)
        return SolveResult(Termination.OPTIMAL, "fake", "0", 0.0, objective=cost, mip_gap=0.0)

    first, second = {"day_config[a]": 1.0}, {"day_config[a]": 0.0}
    with (
        patch.object(day_choice, "day_columns", lambda _lp: ["day_config[a]"]),
        patch.object(day_choice, "split", lambda _lp: object()),
        patch.object(day_choice, "without_day", lambda _lp, _choice=None: lp),
        patch.object(day_choice, "choice_of", lambda _lp, values: values),
        patch.object(day_choice, "relaxed_choice", lambda *_args: second),
    ):
        found = day_choice._by_day(lp, None, EXACT.started(), None, first, solve)
    assert cutoffs == [None, 100.0]
    assert found.objective == 100.0


def _steps(name: str, bound: float, cost: float, log: list):
    """A choice's solve in steps (by_period.begin_periods' face): yields its bound, and
    at a cutoff its bound passes answers no plan (as the priced pass ends), else `cost`."""
    cutoff = yield bound
    log.append((name, cutoff))
    if cutoff is not None and bound > cutoff:
        return SolveResult(Termination.INFEASIBLE, "fake", "0", 0.0)
    return SolveResult(
        Termination.OPTIMAL, "fake", "0", 0.0, objective=cost, values={}, mip_gap=0.0
    )


def _choices(bounds_costs: dict[str, tuple[float, float]]):
    """_by_day over two choices, the start's ("first", tried second as before: the
    relaxation's, "second", went first), each begun with its (bound, cost): the log of
    (choice, cutoff) as each finished, and the answer."""
    lp = LinearProgram("choices")
    log: list = []
    first, second = {"day_config[a]": 1.0}, {"day_config[a]": 0.0}
    fixed = {id(first): "first", id(second): "second"}
    chosen = []

    def without(_lp, choice=None):
        chosen.append(fixed.get(id(choice)))
        return lp

    def begin(_fixed, backend, settings, fleet, own, parts, memo):
        del backend, settings, fleet, own, parts, memo
        name = chosen[-1]
        return _steps(name, *bounds_costs[name], log)

    with (
        patch.object(day_choice, "day_columns", lambda _lp: ["day_config[a]"]),
        patch.object(day_choice, "split", lambda _lp: object()),
        patch.object(day_choice, "without_day", without),
        patch.object(day_choice, "choice_of", lambda _lp, values: values),
        patch.object(day_choice, "relaxed_choice", lambda *_args: second),
    ):
        found = day_choice._by_day(lp, None, EXACT.started(), None, first, None, begin)
    return log, found


def test_the_choice_of_the_lowest_bound_finishes_first_and_cuts_off_the_other():
    """The relaxation's choice (tried first before) bounds at 110, the start's at 90: the
    start's finishes first, with no cutoff, at $95; the relaxation's then finishes with
    $95 as its cutoff, which its bound passes: no plan, the $95 kept (before, the
    relaxation's was solved in full first, and lost)."""
    log, found = _choices({"second": (110.0, 120.0), "first": (90.0, 95.0)})
    assert log == [("first", None), ("second", 95.0)]
    assert found.objective == 95.0
    assert found.values == {"day_config[a]": 1.0}  # the start's choice


def test_a_tie_within_a_millionth_keeps_the_choice_tried_first_before():
    """The start's choice bounds lower (90 against 99) and finishes first at
    $99.9999995; the relaxation's, not cut off (99 < 99.9999995), costs $100. In turn
    (the relaxation's first) the start's would be kept only if cheaper by more than 1e-6,
    and it is cheaper by 5e-7: the relaxation's is kept, as before."""
    log, found = _choices({"second": (99.0, 100.0), "first": (90.0, 100.0 - 5e-7)})
    assert log == [("first", None), ("second", 100.0 - 5e-7)]
    assert found.objective == 100.0
    assert found.values == {"day_config[a]": 0.0}  # the relaxation's choice
