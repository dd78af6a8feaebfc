"""Every month that ends with a plan leaves its fleet to the month after it: where that
month's share ends without a plan and it has no static plan of its own, it answers with
the fleet of the month before's plan, grown to its demand (solver.time.held.plan_fleet,
PeriodsStep.fallback, grown_fleet), stopped at the limit with its gap, verified; before,
a month that solved on its own left nothing (its held fleet was only set where the
rounds asked for it) and the month after ended the run with exit 4.

The clock is not waited on: tests/solver/time/test_stopped_months.py's backend that finds
no incumbent, and rounds told their deadline has passed, stand for a spent share."""

import logging
import math

from models.io.loading import validate_instance
from solver.decompose.period_split import Held
from solver.program.families.pricing import CommittedColumn
from solver.program.families.variables import PoolUsedColumn
from solver.program.row_names import ReplicasColumn, timed_name
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.time.held import grown_fleet, plan_fleet
from solver.verify.hours import verify_hours
from tests.solver.time.test_stopped_months import (
    _month_1_stopped_without_its_fleet,
    _months,
    _stopping,
)


def test_a_plans_fleet_is_each_pool_at_its_busiest_period_grown_by_the_months_between():
    """A month's plan runs chat's pool at 3, 7 and 5 replicas in periods 0-2 (its
    configuration used in each) on 16 committed GPUs: its fleet holds 7 replicas and the
    16 GPUs; grown to two months later at 10%: ceil(7 x 1.1^2) = ceil(8.47) = 9, and to
    one month later: ceil(7 x 1.1) = ceil(7.7) = 8."""
    pool = ReplicasColumn("chat", "c", "r1").name()
    used = PoolUsedColumn("chat", "c", "r1").name()
    gpus = CommittedColumn("r1", "h100-sxm").name()
    values = {gpus: 16.0}
    for period, count in enumerate((3.0, 7.0, 5.0)):
        values[timed_name(pool, period, 2)] = count
        values[timed_name(used, period, 2)] = 1.0
    held = plan_fleet(values, month=2)
    assert held == Held({gpus: 16.0}, {pool: 7.0, used: 1.0}, 2)
    data = _months(6, 0.1)
    inst = validate_instance(data, "periods.yaml")
    chat = next(iter(inst.workloads)).name
    pool, used = ReplicasColumn(chat, "c", "r1").name(), PoolUsedColumn(chat, "c", "r1").name()
    held = Held({gpus: 16.0}, {pool: 7.0, used: 1.0}, 2)
    assert grown_fleet(held, inst, 4).grown == {pool: 9.0, used: 1.0}  # 7 x 1.21 = 8.47
    assert grown_fleet(held, inst, 3).grown == {pool: 8.0, used: 1.0}  # 7 x 1.1 = 7.7
    assert math.ceil(7 * 1.1**2) == 9 and math.ceil(7 * 1.1) == 8


def test_a_plan_without_pools_leaves_no_fleet():
    """Nothing but a commitment: no pool to hold, no fallback."""
    assert plan_fleet({CommittedColumn("r1", "h100-sxm").name(): 8.0}, 0) is None


def test_a_month_that_solved_on_its_own_leaves_its_fleet_to_the_month_after(monkeypatch):
    """No month has a static plan of its peak (the held fleet answers None), month 0
    solves as usual and month 1's share ends without a plan: month 1 answers with month
    0's plan's fleet grown by 1.5, named stopped at the limit with its gap in (0, 1),
    and the horizon verifies. Before, month 0 left nothing and month 1 raised
    TimeLimitReached (exit 4)."""
    from solver import solve as pipeline

    _stopping(monkeypatch, {1})
    monkeypatch.setattr(pipeline, "held_fleet", lambda *_args: None)
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert [m.stopped_at_limit for m in plan.months] == [False, True]
    stopped = plan.months[1]
    assert stopped.mip_gap is not None and 0.0 < stopped.mip_gap < 1.0
    assert stopped.status == f"feasible (gap {stopped.mip_gap:.2%})"
    assert plan.summary.stopped_months == (1,)
    assert verify_hours(inst, plan).ok


def test_a_later_month_whose_build_passes_the_deadline_answers_with_its_fallback(
    monkeypatch, caplog
):
    """A 2-month horizon whose clock jumps 10^6 s past its limit as month 1's build
    begins: month 1 still builds (month 0 is planned) and answers with month 0's fleet
    grown by 1.5 (nothing found in no time), stopped at the limit; both months are
    planned and the horizon verifies. Before, month 1's program build
    raised TimeLimitReached (exit 4) with month 0 in hand."""
    _past_the_limit_from_month_1s_build(monkeypatch)
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    with caplog.at_level(logging.INFO, logger="fleetplan.progress"):
        plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    # month 1, past the deadline, is not priced, and its progress line says so
    assert "month 1 pricing (not priced: time_limit) done" in caplog.text
    assert [m.month for m in plan.months] == [0, 1]
    assert [m.stopped_at_limit for m in plan.months] == [False, True]
    assert all(m.cost_per_month > 0 for m in plan.months)
    assert verify_hours(inst, plan).ok


def _capped_months(monkeypatch, power_kw: float):
    """Month 1 of 2 (r1 at 400 requests/s, growing 50%) finds no plan in its share and
    has no peak plan of its own: its fallback is month 0's fleet, each pool at its
    busiest grown by 1.5, in r1 under a `power_kw` cap."""
    _month_1_stopped_without_its_fleet(monkeypatch)
    data = _months(2, 0.5, r1=400.0)
    data["regions"][0]["power_kw"] = power_kw
    return validate_instance(data, "periods.yaml")


SERVER_KW = 8 * 0.700 * 1.82
"""An 8 x H100 server's kW: 8 x 700 W x the server factor 1.82 (DGX H100's 10.2 kW)."""


def test_a_fallback_fleet_the_power_cap_refuses_is_re_planned_under_it(monkeypatch):
    """r1's power_kw 21 holds two H100 servers (2 x 10.19 = 20.4 kW), which month 0 and
    month 1 each fit in; month 0's fleet grown by 1.5 does not (its r1 pool's GPUs, n x
    1.5 rounded up, take a third server: the next test, where the re-fit is off). Month 1
    re-plans the periods it refuses with their pools free under the cap: a plan, stopped
    at the limit (not proven), its method saying so, r1 within its 21 kW, verified.
    Before, month 1 raised TimeLimitReached (exit 4)."""
    inst = _capped_months(monkeypatch, 21.0)
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert 2 * SERVER_KW <= 21.0 < 3 * SERVER_KW
    assert [m.stopped_at_limit for m in plan.months] == [False, True]
    assert all(p.kw <= 21.0 for m in plan.months for p in m.power_kw if p.region == "r1")
    assert any("re-planned with their pools free" in note for note in plan.notes)
    assert verify_hours(inst, plan).ok


def test_a_fallback_no_period_can_be_re_planned_for_exits_4_naming_the_cap(monkeypatch):
    """The same run with the re-fit finding nothing (a period that has no plan under the
    caps at the commitment it inherits) and no whole solve past the deadline
    (`_late_whole`, the next test): exit 4 (TimeLimitReached), its message naming
    month 1's fallback and r1's power_kw 21, which the grown fleet passes by whole
    servers: its kW (stated to 0.1) is a whole number of 10.19 kW servers, at least three."""
    import re

    import pytest

    from solver.decompose import by_period
    from solver.settings import TimeLimitReached
    from solver.time import day_choice

    inst = _capped_months(monkeypatch, 21.0)
    monkeypatch.setattr(by_period._Rounds, "refit", lambda self, levels: None)
    monkeypatch.setattr(day_choice, "_late_whole", lambda *_args: None)
    with pytest.raises(TimeLimitReached) as stopped:
        solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3))
    message = str(stopped.value)
    assert "month 1's share of the 60 s time limit ran out after " in message  # not reached
    assert "month 1's fallback (month 0's fleet grown to month 1's demand" in message
    kw = float(re.search(r"([0-9.,]+) kW in r1, over its power_kw 21", message).group(1))
    servers = round(kw / SERVER_KW)
    assert servers >= 3 and abs(kw - servers * SERVER_KW) < 0.05  # stated to 0.1 kW


def test_a_month_no_held_fleet_fits_is_its_program_solved_whole_past_the_deadline(
    monkeypatch,
):
    """The capped run, the clock 10^6 s past the limit from month 1's build on (month 1
    builds past it: month 0 is planned) and the periods' re-fit finding nothing: month 1
    is its program solved whole past the deadline (day_choice._late_whole), stopped at
    the limit, r1 within its 21 kW, its note naming it; the horizon verifies. Before, a
    month whose held fleet's choice had no plan by the deadline exited 4
    (procurement-3region at --time-limit 5, month 10, whose whole program HiGHS solves to
    1% in about 2 s)."""
    from solver.decompose import by_period

    _past_the_limit_from_month_1s_build(monkeypatch)
    inst = _capped_months(monkeypatch, 21.0)
    monkeypatch.setattr(by_period._Rounds, "refit", lambda self, levels: None)
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert [m.stopped_at_limit for m in plan.months] == [False, True]
    assert all(p.kw <= 21.0 for m in plan.months for p in m.power_kw if p.region == "r1")
    assert any("the program solved whole past it" in note for note in plan.notes)
    assert verify_hours(inst, plan).ok


def test_month_0_with_no_fallback_tries_again_within_the_solve_time_left(monkeypatch):
    """Month 0 of 2 has no peak plan (the held fleet answers None) and is told its build
    took 10 times the run's limit L: month 1 keeps 1.5 x 10 L for its own, so month 0's
    share ends before it starts and finds nothing. With no fallback at all its second
    try takes the solve time left (0.8 L), not one part bounded by what month 1 keeps
    (already past): both months are planned and verified. Before, the run ended at once
    with exit 4 in month 0's solve, most of its limit unspent (procurement-3region at
    --time-limit 5: 'reached in solve after 1.3 s')."""
    from solver import solve as pipeline
    from solver.time import step

    built = step.PeriodsStep.build

    def build(self, backend, settings):
        built(self, backend, settings)
        if self.horizon.month == 0:
            self.build_s = 10.0 * self.settings.deadline.limit_s

    monkeypatch.setattr(step.PeriodsStep, "build", build)
    monkeypatch.setattr(pipeline, "held_fleet", lambda *_args: None)
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert [m.month for m in plan.months] == [0, 1]
    assert all(m.cost_per_month > 0 for m in plan.months)
    assert verify_hours(inst, plan).ok


def _past_the_limit_from_month_1s_build(monkeypatch) -> None:
    """The run's clock (solver.settings' monotonic) jumps 10^6 s, far past any limit, as
    month 1's periods program begins to build: month 0 is planned in time, every later
    stage is past the deadline."""
    import types

    from solver import settings as settings_module
    from solver.time import step

    real, offset = settings_module.time.monotonic, [0.0]
    clock = types.SimpleNamespace(monotonic=lambda: real() + offset[0])
    monkeypatch.setattr(settings_module, "time", clock)
    built = step.PeriodsStep.build

    def build(self, backend, settings):
        if self.horizon.month == 1:
            offset[0] = 1e6
        built(self, backend, settings)

    monkeypatch.setattr(step.PeriodsStep, "build", build)


class _Counting:
    """The real backend, each call counted by the month in turn (`month`), by kind: an LP
    relaxation (`*-relaxed`), a period block solved within the run's deadline (the
    search) or past it (no deadline: the held fleet's last plan)."""

    def __init__(self, real, month: list[int], counts: dict):
        self.real, self.month, self.counts = real, month, counts

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run(self, lp, settings, start=None):
        if lp.name.endswith("-relaxed"):
            kind = "relaxation"
        elif "-period" in lp.name:
            kind = "searched block" if settings.deadline is not None else "late block"
        else:
            kind = "other"
        key = (self.month[0], kind)
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.real.run(lp, settings, start=start)


def test_a_month_whose_turn_comes_past_the_limit_is_cut_not_searched(monkeypatch):
    """A 3-month horizon whose clock jumps 10^6 s past its limit once month 1 is read
    back: month 2's turn comes past the limit. It is cut, and where the month before's
    hours cannot be held and grown (solver.time.cut_month: a cap refuses them, here it
    is told so; tests/solver/time/test_cut_month.py for the rule) it is planned by its
    program: no LP relaxation and no block solved within the deadline (its day's choice,
    priced pass and rounds), only the held fleet's last plan past it (month 1, in time,
    ran both); the plan names it cut with its status and gap, and the horizon verifies.
    Before, month 2 ran its relaxations past the limit as if searching (growth-horizon
    at --time-limit 2: every month built and solved, 38 s on a loaded machine)."""
    import types

    from solver import settings as settings_module
    from solver import solve as pipeline
    from solver.time import cut_month, step

    monkeypatch.setattr(cut_month, "cut_month_plan", lambda *_args: None)

    real, offset = settings_module.time.monotonic, [0.0]
    monkeypatch.setattr(
        settings_module, "time", types.SimpleNamespace(monotonic=lambda: real() + offset[0])
    )
    month, counts = [0], {}
    optimise, read_back = step.PeriodsStep.optimise, step.PeriodsStep.read_back

    def optimised(self, backend, settings):
        month[0] = self.horizon.month
        return optimise(self, backend, settings)

    def read(self, *args):
        plan = read_back(self, *args)
        if self.horizon.month == 1:
            offset[0] = 1e6  # past the limit before month 2's turn
        return plan

    monkeypatch.setattr(step.PeriodsStep, "optimise", optimised)
    monkeypatch.setattr(step.PeriodsStep, "read_back", read)
    backend = pipeline.get_backend
    monkeypatch.setattr(pipeline, "get_backend", lambda n: _Counting(backend(n), month, counts))
    inst = validate_instance(_months(3, 0.5, r1=400.0), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert counts.get((1, "relaxation"), 0) > 0 and counts.get((1, "searched block"), 0) > 0
    assert counts.get((2, "relaxation"), 0) == 0
    assert counts.get((2, "searched block"), 0) == 0
    assert counts.get((2, "late block"), 0) > 0
    cut = [n for n in plan.notes if "cut at the time limit, not searched" in n]
    assert len(cut) == 1 and cut[0].startswith("month 2 cut at the time limit")
    stopped = plan.months[2]
    assert [m.stopped_at_limit for m in plan.months] == [False, False, True]
    assert stopped.mip_gap is not None and 0.0 < stopped.mip_gap <= 1.0
    assert stopped.status == f"feasible (gap {stopped.mip_gap:.2%})"
    assert plan.status.startswith("feasible")
    assert verify_hours(inst, plan).ok


def test_a_fallback_that_passes_every_cap_says_the_time_ran_out_not_a_cap(monkeypatch):
    """A held fleet no cap refuses (here none at all: no pool, so 0 GPUs and 0 kW against
    r1's power_kw 21) leaves the limit as the only reason: the message says so and asks for
    time, and names no cap to loosen (sweep26 saw 'loosen that cap' on an instance without
    caps). With a cap passed, the cap is named and loosening it offered."""
    from solver.decompose.period_split import Held
    from solver.time import fallback

    inst = _capped_months(monkeypatch, 21.0)
    none_passed = fallback.refused_message(inst, None, Held(committed={}, layout={}), 1, 3)
    assert (
        "month 1's fallback (month 0's fleet grown to month 1's demand, held every hour)"
        in none_passed
    )
    assert "passes every power and supply cap" in none_passed
    assert none_passed.endswith("raise --time-limit (or solver.time_limit_s)")
    assert "cap by itself" not in none_passed and "loosen" not in none_passed
    over = "30.6 kW in r1, over its power_kw 21"
    monkeypatch.setattr(fallback, "refusals", lambda *_args: [over])
    one_passed = fallback.refused_message(inst, None, Held(committed={}, layout={}), 1, 3)
    assert f"it needs {over}, and neither" in one_passed
    assert one_passed.endswith("or loosen that cap")


def test_a_month_whose_program_solved_whole_past_the_deadline_has_no_plan_is_infeasible(
    monkeypatch,
):
    """The capped run with month 1's demand doubled (r1 at 800 requests/s): r1's GPUs
    draw 30.6 kW against its power_kw 21 (three 10.19 kW servers), so month 1 has no plan
    on any commitment, as the run within its limit says (Infeasible, exit 3). Its share
    spent and the re-fit finding nothing, its program solved whole past the deadline
    (day_choice._late_whole) proves it: the month is diagnosed as within the limit (the
    conflicts its diagnosis names past the deadline vary with the load). Before, the
    proof was read as no plan found in time: TimeLimitReached, exit 4, 'raise
    --time-limit' (growth-horizon at horizon_months 120 and monthly_growth 1.444: month
    3, exit 4 after 4 s; at horizon_months 4, exit 3)."""
    import pytest

    from solver.decompose import by_period
    from solver.errors import Infeasible

    _past_the_limit_from_month_1s_build(monkeypatch)
    data = _months(2, 1.0, r1=400.0)
    data["regions"][0]["power_kw"] = 21.0
    inst = validate_instance(data, "periods.yaml")
    monkeypatch.setattr(by_period._Rounds, "refit", lambda self, levels: None)
    with pytest.raises(Infeasible) as refused:
        solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3))
    assert "month[1]: month 1 of the horizon (demand x2.000)" in str(refused.value)
