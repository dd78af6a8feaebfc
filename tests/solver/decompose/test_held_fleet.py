"""The fleet of the day's peak held every hour (models.operations.time_demand.held_all_day,
solver.decompose.by_period `fleet`, solver.time.step): its static instance, its blocks
renting nothing, and an hourly plan never dearer than it."""

import logging
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from models.operations.time_demand import held_all_day, uses_time, warm_grid
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.by_period import _Rounds
from solver.decompose.period_split import split
from solver.program.families.pricing import CommittedColumn, OnDemandColumn
from solver.program.row_names import ReplicasColumn
from solver.settings import Deadline, SolveSettings
from solver.solve import held_fleet, solve_program
from solver.time import step
from solver.time.day_choice import without_day
from solver.time.held import HELD_PLAN_GAP, HELD_SHARE, planned_held
from solver.time.horizon import Horizon
from solver.time.periods import build_time_program
from tests.solver.decompose.test_by_period import DAYS, _base, _data

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)


def _instance():
    return validate_instance(_base(), "periods.yaml")


def test_the_held_instance_plans_each_region_at_its_peak_at_the_reserved_price():
    """_base: r1 at 40 req/s and r2 at 25 at their profile's peak (3 of [1, 3, 2]); the
    warm rate of an hour is min(arrivals a lag back + headroom, P), so at the peak hour
    it is P: the held demand is 40 and 25. Offers reserved at 60%: H100 2.40 -> 1.44,
    H200 3.10 -> 1.86 $/GPU-hour, with no reserved or spot terms left, so it is static."""
    inst = _instance()
    held = held_all_day(inst)
    assert not uses_time(held)
    demand = held.workloads[0].demand
    assert demand["r1"].peak_rps == pytest.approx(40.0)
    assert demand["r2"].peak_rps == pytest.approx(25.0)
    for key, rates in warm_grid(inst).items():
        assert held.workloads[0].demand[key[1]].peak_rps == pytest.approx(max(rates))
    for region in held.regions:
        assert region.supply["h100-sxm"].price_per_gpu_hour == pytest.approx(1.44)
        assert region.supply["h200"].price_per_gpu_hour == pytest.approx(1.86)
        for offer in region.supply.values():
            assert offer.reserved_price_per_gpu_hour is None
            assert offer.spot_price_per_gpu_hour is None


def test_the_held_fleet_serves_every_period_renting_nothing():
    """The static plan of the held instance, committed: every block has a solution
    renting nothing (a restriction of the block, so it adds no cut), and the plan they
    make costs what the commitment costs, plus the tie-break per GPU used."""
    inst = _instance()
    table = build_candidates(inst)
    bought, layout = held_fleet(held_all_day(inst), table, EXACT.started())
    assert sum(bought.values()) > 0 and layout
    program = build_time_program(inst, table)
    program = replace(program, lp=without_day(program.lp))  # the rounds' program
    parts = split(program.lp)
    gpus = {CommittedColumn(r, g).name(): n for (r, g), n in bought.items()}
    levels = {o.gpus: o.level_of(gpus[o.gpus]) for o in parts.offers}
    run = _Rounds(program.lp, parts, get_backend("highs"), EXACT.started())
    run.solve_held(levels, layout)
    assert run.cuts == []
    cost, values = run.known.plan(levels)
    rented = [v for name, v in values.items() if name.startswith(OnDemandColumn.family)]
    assert rented and max(rented) == 0.0
    commitment = sum(program.lp.objective.get(o.gpus, 0.0) * gpus[o.gpus] for o in parts.offers)
    assert commitment <= cost <= commitment * (1 + 1e-4)


@examples(max_examples=6, deadline=None)
@given(
    r1=st.sampled_from([15.0, 40.0, 90.0]),
    **DAYS,
)
def test_an_hourly_plan_is_never_dearer_than_the_peak_plan_held_all_day(
    r1, shape, reserved_share, h200, cap, survive, buy_unit
):
    """Holding the peak's fleet every hour is one plan of the hourly program (an hour's
    warm rates are at most the peak's; reserved GPUs cost the same every hour), so the
    hourly optimum costs at most the held instance's, both within their gap. 6 days a run
    (12 took 2.7 s of CPU), new ones every run."""
    data = _data({"r1": r1, "r2": 25.0}, shape, reserved_share, h200, cap, survive, buy_unit, None)
    inst = validate_instance(data, "periods.yaml")
    settings = SolveSettings.of(inst, mip_gap=1e-3)
    hourly = solve_program(inst, settings).plan
    held = solve_program(held_all_day(inst), settings).plan
    assert hourly.cost_per_month <= held.cost_per_month * (1 + 2e-3)


def test_the_held_fleet_is_planned_within_its_share_and_named_by_committed_column(monkeypatch):
    """24 s limit, 6 s gone: the static plan gets HELD_SHARE of the 18 s left (deadline at
    6 + 0.6 x 18 = 16.8 s, a 10.8 s limit) at 1% (the run's 1e-6 is tighter), and its
    purchases come back per committed column."""
    seen = []

    def planned(instance, table, settings, templates=None):
        deadline, limit, gap = settings.deadline.limit_s, settings.time_limit_s, settings.mip_gap
        seen.append((deadline, limit, gap, uses_time(instance)))
        return {("r1", "h100-sxm"): 16.0, ("r2", "h200"): 8.0}, {"replicas[x]": 2.0}

    monkeypatch.setattr(step.time, "monotonic", lambda: 106.0)
    settings = replace(EXACT, time_limit_s=24.0, deadline=Deadline(100.0, 24.0))
    months = step.PeriodsStep.__new__(step.PeriodsStep)
    months.instance, months.table, months.held_fleet = _instance(), None, planned
    months.horizon = Horizon()
    committed = months._held_beside(settings)()
    assert HELD_SHARE == 0.6
    assert seen == [(pytest.approx(16.8), pytest.approx(10.8), HELD_PLAN_GAP, False)]
    assert committed.committed == {
        CommittedColumn("r1", "h100-sxm").name(): 16.0,
        CommittedColumn("r2", "h200").name(): 8.0,
    }
    assert committed.layout == {"replicas[x]": 2.0}


def test_a_peak_no_fleet_can_serve_gives_no_held_fleet():
    """Offers of one GPU each cannot hold a 40 req/s peak of whole 8-GPU servers: the static
    program of the peak is infeasible, and the held fleet is None (the rounds go on
    without it) rather than an error."""
    data = _base()
    for region in data["regions"]:
        for offer in region["supply"].values():
            offer["max_gpus"] = 1
    inst = validate_instance(data, "periods.yaml")
    assert held_fleet(held_all_day(inst), build_candidates(inst), EXACT.started()) is None


def test_a_held_fleet_that_fails_leaves_the_rounds_without_it(caplog):
    """The held fleet only speeds the rounds up: a static plan that raises gives None (and a
    line in the debug log), not an error in the hourly solve."""
    caplog.set_level(logging.DEBUG, logger=planned_held.__module__)

    def failing(*_args):
        raise ValueError("boom")

    assert planned_held(failing, _instance(), None, EXACT) is None
    assert "no held fleet" in caplog.text


def test_a_spent_share_plans_no_held_fleet(monkeypatch):
    """24 s limit, all 24 s gone: HELD_SHARE of nothing is no time, so no static plan is
    started (a zero time limit is no solver call) and the rounds go on without one."""
    called = []
    monkeypatch.setattr(step.time, "monotonic", lambda: 124.0)
    settings = replace(EXACT, time_limit_s=24.0, deadline=Deadline(100.0, 24.0))
    months = step.PeriodsStep.__new__(step.PeriodsStep)
    months.instance, months.table, months.horizon = _instance(), None, Horizon()
    months.held_fleet = lambda *args: called.append(args)
    assert months._held_beside(settings) is None
    assert called == []


def test_a_held_fleet_at_the_lowest_levels_still_gives_the_first_plan(monkeypatch):
    """A month whose commitment cannot move (or whose held fleet commits no more than its
    floor) has held levels equal to the lowest: its blocks are still solved renting
    nothing with the held pools first (the cheap first plan), not only from scratch."""
    from solver.decompose import by_period
    from solver.decompose.period_split import Held

    inst = _instance()
    program = build_time_program(inst, build_candidates(inst))
    program = replace(program, lp=without_day(program.lp))  # the rounds' program
    parts = split(program.lp)
    lowest = {o.gpus: o.lowest for o in parts.offers}
    calls = []
    monkeypatch.setattr(
        by_period._Rounds, "solve_held", lambda _run, levels, layout: calls.append(levels)
    )
    found = by_period.solve_by_period(
        program.lp, get_backend("highs"), EXACT.started(), parts, fleet=lambda: Held({}, {})
    )
    assert calls == [lowest]
    assert found is not None and found.termination.has_solution


def test_a_month_without_its_own_held_fleet_starts_from_the_month_befores(monkeypatch):
    """Month 4's own static plan finds nothing in its share (None): the rounds start from
    the fleet month 3 started from, and the step records it; with its own plan, its own;
    with its share spent, the month before's without planning."""
    from solver.decompose.period_split import Held

    pool = ReplicasColumn("chat", "c", "r1").name()
    earlier = Held({CommittedColumn("r1", "h100-sxm").name(): 16.0}, {pool: 2.0})
    monkeypatch.setattr(step.time, "monotonic", lambda: 106.0)
    settings = replace(EXACT, time_limit_s=24.0, deadline=Deadline(100.0, 24.0))
    for own, expected in ((None, earlier), (({("r2", "h200"): 8.0}, {}), "own")):
        months = step.PeriodsStep.__new__(step.PeriodsStep)
        months.instance, months.table = _instance(), None
        months.horizon = Horizon(month=4, months=12, earlier_fleet=earlier)
        months.held_fleet = lambda *_args, own=own: own
        found = months._held_beside(settings)()
        if expected == "own":
            assert found.committed == {CommittedColumn("r2", "h200").name(): 8.0}
        else:  # the instance grows by nothing: its pools grown are its pools
            assert (found.committed, found.layout) == (earlier.committed, earlier.layout)
            assert found.grown == {pool: 2.0}
        assert months.held_found is found
    monkeypatch.setattr(step.time, "monotonic", lambda: 124.0)  # the share is spent
    months.held_fleet = lambda *_args: pytest.fail("no time to plan it")
    assert months._held_beside(settings)().layout == earlier.layout


def test_no_held_fleet_thread_outlives_the_solve(monkeypatch):
    """The held fleet is planned in a thread beside the periods program; where the rounds
    never ask for it, the step's close waits for it, so nothing solves after
    solve_program returns (a HiGHS solve still running as the process exits is aborted by
    the C++ runtime: exit 134 after the plan was written). The held plan is slowed here
    so that it is still running when the periods program (solved whole, proven without
    its fallback) ends."""
    import threading
    import time

    planned = step.planned_held

    def slow(*args):
        time.sleep(0.5)
        return planned(*args)

    monkeypatch.setattr(step, "planned_held", slow)
    data = _base()  # without reserved prices: one program of every hour, solved whole
    for region in data["regions"]:
        for offer in region["supply"].values():
            offer.pop("reserved_price_per_gpu_hour", None)  # one dict for both regions
    solve_program(validate_instance(data, "periods.yaml"), EXACT)
    assert [t.name for t in threading.enumerate() if t.name == "held-fleet"] == []
