"""A solve stopped by a tight time limit (solver.decompose.by_workload.optimise): the plan
the stages reached is kept, its gap stated against a valid bound, or the message says
which stages the limit stopped and what limit to try."""

import time
from dataclasses import replace

import pytest

import solver.decompose.regions.join as region_join
import solver.decompose.regions.plan as by_region
from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from models.operations.site import node_gpus
from solver.backends import get_backend
from solver.backends.base import relative_gap
from solver.candidates.table import build_candidates
from solver.decompose.by_workload import Stages
from solver.decompose.join_values import broken_rows
from solver.program.build import build_program
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import SolveResult, Termination
from solver.program.optimised import Method
from solver.program.sets import ProgramSets
from solver.settings import Deadline, SolveSettings, TimeLimitReached
from solver.solve import solve_program
from tests.solver.decompose.default_policy import EXACT, default_policy_join
from tests.synthetic import at_policy_defaults, generated_data

TOLERANCE = 1e-6


def _result(objective: float | None, gap: float | None, termination=Termination.FEASIBLE):
    return SolveResult(termination, "highs", "1", 0.0, objective, mip_gap=gap)


def test_a_stopped_region_program_bounds_by_its_objective_less_its_gap():
    """1000 at a 5% gap: 1000 - 0.05 x 1000 = 950; a gap above 100% bounds by 0, a
    result without a gap by 0 (a region's cost is never negative)."""
    assert region_join.stopped_bound_of(_result(1000.0, 0.05)) == pytest.approx(950.0)
    assert region_join.stopped_bound_of(_result(1000.0, 3.0)) == 0.0
    assert region_join.stopped_bound_of(_result(1000.0, None)) == 0.0


def _whole_servers_program(survive: str):
    data = generated_data(3, 2, 2, survive=survive, seed=0)
    at_policy_defaults(data)
    instance = validate_instance(data, data["name"])
    table = build_candidates(instance, EXACT)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    return build_program(instance, table, sets=sets)


@pytest.mark.parametrize("survive", ["none", "region"])
def test_unproved_regions_still_give_the_floored_plan_with_its_gap(survive, monkeypatch):
    """The clock stops every region's program before its proof (no proven bound): the
    floored plan is still returned, FEASIBLE (never a proof), holding every row, its gap
    stated against the regions' results as they stood, a bound no higher than the
    whole optimum."""
    monkeypatch.setattr(region_join, "bound_of", lambda *_args: None)
    program = _whole_servers_program(survive)
    highs = get_backend("highs")
    whole = highs.run(program.lp, EXACT)
    found = by_region.by_region(program, highs, EXACT, None, float("inf"))
    assert found is not None and found.method is Method.BY_REGION
    assert found.result.termination is Termination.FEASIBLE
    values = found.result.values
    assert broken_rows(program.lp, values, {}, {}) == []
    cost = program.lp.objective_value(values)
    assert cost >= whole.objective * (1 - TOLERANCE)
    stopped = region_join.region_join(program, highs, EXACT, None, float("inf")).stopped
    assert stopped is not None and stopped <= whole.objective * (1 + TOLERANCE)
    assert found.result.mip_gap == pytest.approx(relative_gap(cost, stopped) or 0.0)


def test_the_message_names_each_stage_and_twice_the_limit():
    """10 s spent, 3 + 2 s of it by the stages: 10 - 5 = 5 s before them; twice the
    limit, 2 x 20 = 40 s, and 2 x 3.5 = 7 s rounded up to 1 s below 10 s: 7."""
    spent = [("the regions' programs", 3.0, False), ("parts", 2.0, True)]
    deadline = Deadline(time.monotonic() - 10.0, 16.0)
    settings = replace(SolveSettings(time_limit_s=20.0), deadline=deadline)
    text = Stages(settings, spent=spent).stopped()
    assert text.startswith("no plan by the limit: 5.0 s before the solve, then ")
    assert "the regions' programs 3.0 s (no plan), parts 2.0 s (a plan)" in text
    assert text.endswith("try --time-limit 40")
    short = replace(settings, time_limit_s=3.5)
    assert Stages(short, spent=spent).stopped().endswith("try --time-limit 7")
    odd = replace(settings, time_limit_s=26.0)  # 52 s, up to 60
    assert Stages(odd, spent=spent).stopped().endswith("try --time-limit 60")


@pytest.mark.parametrize("limit_s", [0.5, 1.0, 2.0])
def test_a_tight_limit_gives_a_verified_plan_with_its_gap_or_says_why(limit_s):
    """A small whole-server multi-workload instance with region loss at a tight limit:
    either a plan (verified by the solve itself; a rejected plan raises), optimal or
    feasible with its gap stated, or TimeLimitReached whose message names the stage and
    the limit to try."""
    data = generated_data(5, 8, 3, survive="region", seed=1)
    at_policy_defaults(data)
    instance = validate_instance(data, data["name"])
    settings = SolveSettings.of(instance, time_limit_s=limit_s, mip_gap=1e-4)
    try:
        plan = solve_program(instance, settings).plan
    except TimeLimitReached as stopped:
        message = str(stopped)
        assert f"time limit of {limit_s:g} s reached in" in message
        assert "--time-limit" in message
        return
    assert plan.cost_per_month > 0
    assert plan.status == "optimal" or plan.status.startswith("feasible (gap ")
    if plan.status != "optimal":
        assert plan.solver.mip_gap is not None and plan.solver.mip_gap >= 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_workload_join_rounded_to_whole_servers_is_a_plan_of_the_whole(seed):
    """Each workload's plan buys single GPUs; the join sums them per (region, GPU type)
    and rounds up to whole servers (solver.decompose.join_values.joined_purchases): more
    GPUs than the replicas use, so every capacity row still holds, and with supply
    enough for the sum (the generator's 64-512 GPUs per offer) every row of the whole
    holds: a plan to fall back on, costing no less than the whole optimum."""
    program, values = default_policy_join(seed)
    sets, instance = program.sets, program.sets.instance
    assert broken_rows(program.lp, values, {}, {}) == []
    whole = get_backend("highs").run(program.lp, EXACT)
    assert program.lp.objective_value(values) >= whole.objective * (1 - TOLERANCE)
    for r, g in sets.offers:  # purchased[r,g] = servers[r,g] x GPUs per server
        bought = values[PurchasedColumn(r, g).name()]
        assert bought == values[ServersColumn(r, g).name()] * node_gpus(instance, g)


def test_a_part_gets_its_size_share_of_the_time_left():
    from solver.decompose.join_run import part_share
    from solver.settings import MIN_CALL_S

    # 60 s left, parts of 300, 100 and 100 integers to start, one process:
    # the largest gets 60 x 300 / 500 = 36 s, a small one 60 x 100 / 500 = 12 s
    assert part_share(60.0, 300, [300, 100, 100], 1) == pytest.approx(36.0)
    assert part_share(60.0, 100, [300, 100, 100], 1) == pytest.approx(12.0)
    # two processes side by side: 60 x 2 x 100 / 500 = 24 s, never more than what is left
    assert part_share(60.0, 100, [300, 100, 100], 2) == pytest.approx(24.0)
    assert part_share(60.0, 300, [300, 100, 100], 2) == pytest.approx(60.0)
    # the last part gets all that is left; a sliver still gets the least call
    assert part_share(7.0, 50, [50], 1) == pytest.approx(7.0)
    assert part_share(0.01, 1, [1, 10_000], 1) == MIN_CALL_S


def test_the_regions_take_all_the_time_where_no_whole_solve_would_follow(monkeypatch):
    """With a 100 s limit the whole program is solved after the regions' stage only with
    WHOLE_AFTER_JOIN_SHARE x 100 = 25 s left. 80 s left: the regions' REGION_FIRST_SHARE
    of it leaves 0.25 x 80 = 20 s < 25, so the regions take all of it; 120 s left (a
    limit raised past the solve's own) leaves 30 s, and they take their share; no limit,
    their share. Off (FULL_SHARE_WHEN_LITTLE_AFTER), never all."""
    import solver.decompose.by_workload as by_workload

    settings = SolveSettings(time_limit_s=100.0)
    share = by_workload.REGION_FIRST_SHARE
    assert by_workload._little_after(settings, 80.0, share)
    assert not by_workload._little_after(settings, 120.0, share)
    assert not by_workload._little_after(SolveSettings(time_limit_s=None), 80.0, share)
    monkeypatch.setattr(by_workload, "FULL_SHARE_WHEN_LITTLE_AFTER", False)
    assert not by_workload._little_after(settings, 80.0, share)


class _Seen(Exception):
    """Stops optimise once the regions' stage has been handed its deadline."""


def test_a_limited_solve_gives_the_regions_stage_its_whole_time(monkeypatch):
    """optimise on a region-loss program with whole servers, 40 s left of a 60 s limit:
    after the regions' REGION_FIRST_SHARE of it 0.25 x 40 = 10 s would be left, less than
    the WHOLE_AFTER_JOIN_SHARE x 60 = 15 s the whole program is solved in, so the
    regions' stage gets the solve's deadline, ~40 s away, where it got 0.75 x 40 = 30 s."""
    import solver.decompose.by_workload as by_workload

    program = _whole_servers_program("region")
    deadlines = []

    def by_region_spied(program, backend, settings, bounds, deadline):
        deadlines.append(deadline - time.monotonic())
        raise _Seen

    monkeypatch.setattr(by_workload, "by_region", by_region_spied)
    settings = replace(EXACT, time_limit_s=60.0).started(at=time.monotonic() - 20.0)
    for full, expected in ((True, 40.0), (False, 0.75 * 40.0)):
        monkeypatch.setattr(by_workload, "FULL_SHARE_WHEN_LITTLE_AFTER", full)
        with pytest.raises(_Seen):
            by_workload.optimise(program, get_backend("highs"), settings)
        assert deadlines.pop() == pytest.approx(expected, abs=1.0)
