"""A periods program whose time runs out before the search has a plan still answers with
one: the held fleet's (solver.decompose.by_period, `_Rounds.held_plan`), its gap stated,
verified; a procurement month so stopped is named in the plan, and the months after it
are planned (solver.time.step: its second try takes one part of what is left, not all).

The clock is not waited on: a backend that finds no incumbent in any MIP of the periods
program asked within a deadline (what HiGHS answers when the clock stops it first), and
the rounds told that their deadline has passed, stand for a month whose share ran out."""

import math

import pytest

from cli.render.summary_tables import summary_table
from cli.render.time_tables import _solved
from models.io.loading import validate_instance
from solver.decompose import by_period
from solver.decompose.period_split import Held
from solver.plan.schema import gap_percent
from solver.program.families.pooling import PoolAtLeastColumn
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import SolveResult, Termination
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.time import months, shares, step
from solver.time.held import grown_fleet
from solver.time.horizon import Horizon
from solver.time.readback.prices import UNPRICED_NOTE
from solver.verify.hours import verify_hours
from tests.solver.decompose.test_by_period import SHAPES, _base, _data

HELD_PLAN = "none by the deadline: the held fleet's plan"


class _NoIncumbent:
    """The real backend, except that a MIP of the periods program (named `*-hours`, its
    blocks `*-hours-period<i>`) asked within a deadline while `stopping()` ends without
    an incumbent. Past the deadline (none given) it answers as the real one."""

    def __init__(self, real, stopping):
        self.real, self.stopping = real, stopping

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run(self, lp, settings, start=None):
        stopped = self.stopping() and settings.deadline is not None and "-hours" in lp.name
        if stopped and lp.integer_variables:
            return SolveResult(Termination.TIME_LIMIT, self.real.name, self.real.version(), 0.0)
        return self.real.run(lp, settings, start=start)


def _stopping(monkeypatch, months: set[int] | None = None):
    """Months in `months` (None: every program) find nothing before their deadline, and
    their rounds see the deadline passed."""
    from solver import solve as pipeline

    month = [0]
    original = step.PeriodsStep.optimise

    def optimise(self, backend, settings):
        month[0] = self.horizon.month
        return original(self, backend, settings)

    stopping = lambda: months is None or month[0] in months  # noqa: E731
    expired = by_period._expired
    monkeypatch.setattr(step.PeriodsStep, "optimise", optimise)
    monkeypatch.setattr(
        by_period, "_expired", lambda s: (stopping() and s.deadline is not None) or expired(s)
    )
    real = pipeline.get_backend
    monkeypatch.setattr(pipeline, "get_backend", lambda name: _NoIncumbent(real(name), stopping))


def _months(count: int, growth: float, r1: float = 40.0) -> dict:
    """_base (r1 at `r1` requests/s at its peak, r2 at 25) over `count` months."""
    data = _data({"r1": r1, "r2": 25.0}, SHAPES[0], 0.6, True, None, "region", "node", None)
    data["policy"].update(horizon_months=count, monthly_growth=growth)
    return data


def test_an_hourly_plan_the_limit_stops_without_one_is_the_peak_fleet_held_all_day(monkeypatch):
    """No block solve answers before the deadline: the plan is the day's peak fleet held
    every hour (its blocks solved past the deadline with its pools held), verified, its
    gap stated against the master's bound: a gap in [0, 1) that the search did not prove
    (stopped: status feasible)."""
    _stopping(monkeypatch)
    inst = validate_instance(_base(), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert plan.solver.termination == "feasible"
    assert HELD_PLAN in plan.solver.method
    assert plan.solver.mip_gap is not None and 0.0 <= plan.solver.mip_gap < 1.0
    assert plan.status.startswith("feasible (gap ")
    assert verify_hours(inst, plan).ok
    # the fleet is held all day: every hour uses the same GPUs, none rented on demand
    assert len({tuple((g.region, g.gpu, g.used) for g in h.gpus) for h in plan.hours}) == 1
    assert all(g.on_demand == 0 for h in plan.hours for g in h.gpus)


def test_an_hourly_plan_with_no_commitment_the_limit_stops_is_the_peak_fleet_held(monkeypatch):
    """No reserved price, so no commitment: the periods program does not split and is
    solved whole (period_passes.solve_whole). That search ends with no incumbent: the
    plan is the day's peak fleet held every hour, verified, its gap against the LP
    relaxation stated (status feasible, the gap in (0, 1): the relaxation's optimum is a
    cost above 0 and below the held plan's, which pays the peak all day)."""
    _stopping(monkeypatch)
    data = _base()
    for region in data["regions"]:
        for offer in region["supply"].values():
            offer.pop("reserved_price_per_gpu_hour", None)  # one supply dict: both regions'
    inst = validate_instance(data, "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert plan.solver.termination == "feasible"
    assert HELD_PLAN in plan.solver.method
    assert plan.solver.mip_gap is not None and 0.0 < plan.solver.mip_gap < 1.0
    assert plan.status == f"feasible (gap {plan.solver.mip_gap:.2%})"
    assert verify_hours(inst, plan).ok
    assert not plan.committed or all(c.committed_gpus == 0 for c in plan.committed)
    # the pools are held all day: every hour uses the same GPUs
    assert len({tuple((g.region, g.gpu, g.used) for g in h.gpus) for h in plan.hours}) == 1


def test_a_month_the_limit_stops_without_a_plan_is_planned_and_so_is_the_month_after(
    monkeypatch,
):
    """Month 0 of 2 finds nothing in its share: its plan is its held fleet's, named as
    stopped at the limit with its gap; month 1 is solved as usual (not stopped), and the
    whole horizon passes the hour verifier. r1 at 400 requests/s, growing 50% a month."""
    _stopping(monkeypatch, {0})
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert [m.month for m in plan.months] == [0, 1]
    assert [m.stopped_at_limit for m in plan.months] == [True, False]
    stopped = plan.months[0]
    assert stopped.mip_gap is not None and 0.0 < stopped.mip_gap < 1.0
    assert stopped.status == f"feasible (gap {stopped.mip_gap:.2%})"
    assert HELD_PLAN in plan.solver.method
    assert all(m.cost_per_month > 0 for m in plan.months)
    assert plan.summary.stopped_months == (0,)
    assert verify_hours(inst, plan).ok
    # the terminal, Markdown and report's summary and months table say it
    summary = dict(summary_table(plan).rows)
    assert summary["stopped at the time limit"].startswith(
        f"month 0 (gap {gap_percent(stopped.mip_gap)})"
    )
    assert _solved(stopped) == f"time limit, gap {gap_percent(stopped.mip_gap)}"
    assert _solved(plan.months[1]) in ("optimal", f"gap {gap_percent(plan.months[1].mip_gap)}")


def _month_1_stopped_without_its_fleet(monkeypatch) -> list[str]:
    """Month 1 stops at its share without a plan, and its own peak plan (the second
    held_fleet the pipeline asks for) answers None; the instances held_fleet is asked
    about, as it is asked."""
    from solver import solve as pipeline

    _stopping(monkeypatch, {1})
    calls = []
    planned = pipeline.held_fleet

    def held_fleet(instance, table, settings, templates=None):
        calls.append(instance.name)
        return None if len(calls) == 2 else planned(instance, table, settings, templates)

    monkeypatch.setattr(pipeline, "held_fleet", held_fleet)
    return calls


def test_a_month_without_its_own_held_fleet_plans_the_month_befores_grown(monkeypatch):
    """Month 1's own peak plan is not found (the static plan of its peak answers None) and
    its share ends without a plan: the month before's fleet, its pools grown by 1.5 and
    rounded up, is its plan, stopped at the limit with its gap, verified with the whole
    horizon."""
    calls = _month_1_stopped_without_its_fleet(monkeypatch)
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert len(calls) == 2
    assert [m.stopped_at_limit for m in plan.months] == [False, True]
    assert plan.months[1].mip_gap is not None and plan.months[1].cost_per_month > 0
    assert verify_hours(inst, plan).ok


def test_a_month_leaves_the_month_after_it_its_build(monkeypatch):
    """Month 0 of 3 is told its build took 10 times the run's limit L (the clock is not
    waited on): months 1 and 2 keep 1.5 x 10 L each for theirs, so month 0's solve ends
    by L - 30 L, before it starts, and month 1's by L - 15 L - (V - 0.2 L): V = 0.2 L + 4 s
    the horizon's verification as month 0's own foretells it, less what the solve share
    keeps already (month 0 has not measured it); both take their held
    fleet's plan (nothing found in no time), stopped at the limit with their gaps, and
    month 1 is not priced; month 2, the last, keeps nothing and solves as usual. Every
    month is planned and the horizon verifies."""
    _stopping(monkeypatch, {0, 1})
    built, solving = step.PeriodsStep.build, step.optimise_periods
    limits, deadlines = [], []

    def build(self, backend, settings):
        built(self, backend, settings)
        limits.append(self.settings.deadline.limit_s)
        self.build_s = 10.0 * limits[-1] if self.horizon.month == 0 else self.build_s

    def optimise_periods(program, backend, settings, fleet=None):
        deadlines.append(settings.deadline.limit_s)
        return solving(program, backend, settings, fleet)

    monkeypatch.setattr(step.PeriodsStep, "build", build)
    monkeypatch.setattr(step, "optimise_periods", optimise_periods)
    monkeypatch.setattr(months, "verification_kept", lambda *_args: verify_s)
    inst = validate_instance(_months(3, 0.5, r1=400.0), "periods.yaml")
    verify_s = 0.2 * inst.solver.time_limit_s + 4.0
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert deadlines[0] == pytest.approx(limits[0] - 1.5 * 10.0 * limits[0] * 2)
    assert deadlines[1] == pytest.approx(limits[0] - 1.5 * 10.0 * limits[0] * 1 - 4.0)
    assert deadlines[-1] > 0.0
    assert [m.month for m in plan.months] == [0, 1, 2]
    assert [m.stopped_at_limit for m in plan.months] == [True, True, False]
    for stopped in plan.months[:2]:  # 100% where no bound was proved in no time
        assert stopped.mip_gap is not None and 0.0 < stopped.mip_gap <= 1.0
        assert stopped.status == f"feasible (gap {stopped.mip_gap:.2%})"
    assert all(m.cost_per_month > 0 for m in plan.months)
    # month 1 is not priced past its time (month 0's note is the plan's own)
    assert plan.months[1].shadow_price_note == UNPRICED_NOTE.format("time_limit")
    assert verify_hours(inst, plan).ok


def test_the_month_befores_pools_grow_by_the_growth_between_the_months():
    """A fleet planned for month 2, grown to month 4 at 10% a month: 5 replicas x 1.1^2 =
    6.05 -> 7; its configuration kept (pool_used 1), its pooling step left to the
    program; a fleet of the same month is kept as it is."""
    data = _months(6, 0.1)
    inst = validate_instance(data, "periods.yaml")
    pool = ReplicasColumn("chat", "c", "r1").name()
    used = PoolUsedColumn("chat", "c", "r1").name()
    step_at = PoolAtLeastColumn("chat", "c", "r1", 2).name()
    held = Held({}, {pool: 5.0, used: 1.0, step_at: 1.0}, month=2)
    grown = grown_fleet(held, inst, 4)
    assert math.ceil(5 * 1.1**2) == 7
    assert grown.grown == {pool: 7.0, used: 1.0}
    assert grown.layout == held.layout and grown.late_layout == grown.grown
    assert grown_fleet(held, inst, 2) is held
    assert held.late_layout == held.layout


@pytest.mark.parametrize(("month", "expected_s"), [(3, 6.0 + 18.0 / 9), (11, 24.0)])
def test_a_second_try_takes_one_part_of_what_is_left(month, expected_s):
    """24 s of solve time, 6 s gone: month 3 of 12 tries again within 18 / 9 = 2 s more,
    the last month within all 18."""
    import time
    from dataclasses import replace

    from solver.settings import Deadline

    settings = replace(
        SolveSettings(time_limit_s=24.0), deadline=Deadline(time.monotonic() - 6.0, 24.0)
    )
    again = shares.retry_share(settings, Horizon(month=month, months=12))
    assert again.deadline.limit_s == pytest.approx(expected_s, abs=0.05)


def _clock_jumps_in_the_build(monkeypatch) -> list[float]:
    """The run's clock jumps 10^6 s ahead once the periods program's build has copied its
    first period, after the day's peak plan (its thread beside the build) has ended;
    the list holds the jump (0 until then)."""
    import threading
    import types

    from solver import settings as settings_module
    from solver.time import periods

    real, offset = settings_module.time.monotonic, [0.0]
    monkeypatch.setattr(
        settings_module, "time", types.SimpleNamespace(monotonic=lambda: real() + offset[0])
    )
    copied = periods.build_program

    def build_program(*args, **kwargs):
        if not offset[0]:
            for thread in threading.enumerate():
                if thread.name == "held-fleet":
                    thread.join()
            offset[0] = 1e6
        return copied(*args, **kwargs)

    monkeypatch.setattr(periods, "build_program", build_program)
    return offset


def test_a_day_whose_build_passes_the_deadline_answers_with_its_peak_fleet_held(monkeypatch):
    """The limit passes while the day's periods program is built, its peak plan in hand:
    the build goes on and the plan is the day's peak fleet held every hour, as for a
    solve the limit stops (stopped: status feasible, its gap stated), verified; every
    hour uses the same GPUs. Before, the build raised TimeLimitReached (exit 4)."""
    offset = _clock_jumps_in_the_build(monkeypatch)
    inst = validate_instance(_base(), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert offset[0] > 0
    assert HELD_PLAN in plan.solver.method
    assert plan.status.startswith("feasible")
    assert verify_hours(inst, plan).ok
    assert len({tuple((g.region, g.gpu, g.used) for g in h.gpus) for h in plan.hours}) == 1


def test_a_day_whose_build_passes_the_deadline_without_its_peak_plan_says_so(monkeypatch):
    """The same, the day's peak plan not found (the static plan answers None): exit 4
    naming the program build, and saying that its fallback was not found in time
    either."""
    from solver import solve as pipeline
    from solver.settings import TimeLimitReached

    _clock_jumps_in_the_build(monkeypatch)
    monkeypatch.setattr(pipeline, "held_fleet", lambda *_args: None)
    inst = validate_instance(_base(), "periods.yaml")
    with pytest.raises(TimeLimitReached) as stopped:
        solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3))
    assert "reached in program build" in str(stopped.value)
    assert "the day's peak plan, its fallback, was not found in time either" in str(stopped.value)


def test_a_month_that_held_its_fallback_hands_it_on_as_planned_not_grown_again():
    """Month 2's fleet holds 2 replicas (pool_used 1); month 3, at 1% a month, held it
    grown, ceil(2 x 1.01) = 3, as its plan (3 replicas at its busiest period). Its
    fallback for month 4 is month 2's fleet itself, which month 4 grows once,
    ceil(2 x 1.01^2) = ceil(2.0402) = 3; month 3's plan's fleet grown again would be
    ceil(3 x 1.01) = 4, a replica a month. A plan with more than the grown fleet (4)
    is handed on as planned."""
    inst = validate_instance(_months(6, 0.01), "periods.yaml")
    pool = ReplicasColumn("chat", "c", "r1").name()
    used = PoolUsedColumn("chat", "c", "r1").name()
    held = grown_fleet(Held({}, {pool: 2.0, used: 1.0}, month=2), inst, 3)
    assert held.grown == {pool: 3.0, used: 1.0}
    month_3 = step.PeriodsStep.__new__(step.PeriodsStep)
    month_3.horizon, month_3.held_found = Horizon(month=3, months=6), held
    month_3.values = {f"{pool}@t00": 3.0, f"{pool}@t12": 2.0, f"{used}@t00": 1.0}
    assert month_3.fallback is held
    assert grown_fleet(month_3.fallback, inst, 4).grown[pool] == math.ceil(2 * 1.01**2) == 3
    month_3.values = {f"{pool}@t00": 4.0, f"{used}@t00": 1.0}
    own = month_3.fallback
    assert own is not held and own.month == 3 and own.layout[pool] == 4.0
