"""Hourly and month programs at scale, at the policy defaults (issue 33): wall time,
method, gap, whether a 30 s limit is respected and whether the verifier accepts the
plan, today's code side by side with the code before the periods program's rounds were
held to the time left. Run by `make bench` only (not `make test`); no timed assertions.

Instances: `tests.synthetic.generated_data` at 5 x 5 x 3, 10 x 10 x 6 and 10 x 20 x 6
(regions x workloads x GPU types), with and without region loss, at the policy
defaults (`at_policy_defaults`: whole servers, one configuration per pool), every offer
reserved at 60% of its on-demand price, every region's demand on one daily profile
shifted 3 hours per region (so up to 24 periods of the day); `months` adds a 12-month
horizon growing 5% a month with orders two months ahead.

"before" is today's code without the fleet of the day's peak held every hour (the
rounds' first plan: solver.decompose.by_period) and with the three changes of the
time-held rounds taken back (patched here): no limit on a pass's block solves
(solver.decompose.period_passes.pass_limit), the whole program after the rounds of a
large periods program (by_period.ROUNDS_TO_DEADLINE), each month solving to the run's
deadline (solver.time.shares.month_share). "limit kept": the run returned within the
limit plus 10% (a plan found is read back, priced and verified past it: solver.solve).
"verified": `solve_program` returns a plan only once the verifier has accepted it
(PlanRejected otherwise); no plan, no verdict.
"""

import os
import time

import pytest

import solver.solve as pipeline
from models.io.loading import validate_instance
from solver.decompose import by_period
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from solver.time import step
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

LIMIT_S = 30.0
RESERVED_SHARE = 0.6
PROFILE = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]
SHIFT_HOURS = 3

SIZES = [(5, 5, 3), (10, 10, 6), (10, 20, 6)]
HORIZONS = ["hours", "months"]
SURVIVE = ["none", "region"]

ROWS: list[tuple] = []


def period_instance(regions: int, workloads: int, gpu_types: int, horizon: str, survive: str):
    """The generated instance at the policy defaults, reserved offers, shifted daily
    profiles and, for `months`, a 12-month horizon (the module text)."""
    data = at_policy_defaults(generated_data(regions, workloads, gpu_types, survive=survive))
    names = [region["name"] for region in data["regions"]]
    for region in data["regions"]:
        for offer in region["supply"].values():
            offer["reserved_price_per_gpu_hour"] = round(
                RESERVED_SHARE * offer["price_per_gpu_hour"], 2
            )
    for load in data["workloads"]:
        for region, demand in load["demand"].items():
            shift = (SHIFT_HOURS * names.index(region)) % len(PROFILE)
            demand["hourly_profile"] = PROFILE[shift:] + PROFILE[:shift]
    if horizon == "months":
        data["policy"].update(horizon_months=12, monthly_growth=0.05, lead_time_months=2)
    data["name"] += f"-{horizon}"
    return validate_instance(data, data["name"])


def _before(monkeypatch) -> None:
    """The rounds as they were: no held fleet, no pass limits, the whole program after a
    large program's rounds, every month to the run's deadline."""
    monkeypatch.setattr(pipeline, "held_fleet", lambda *_args: None)
    monkeypatch.setattr(by_period, "pass_limit", lambda *_args: None)
    monkeypatch.setattr(by_period, "ROUNDS_TO_DEADLINE", False)
    monkeypatch.setattr(step, "month_share", lambda settings, _horizon: settings)


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("instance", "horizon", "failover", "code", "wall s", "load", "status", "gap")
    header += ("limit kept", "verified", "$/month", "method")
    title = f"hourly and month programs at the defaults, {LIMIT_S:g} s limit (highs, 0.1%)"
    print_table(title, header, ROWS)


@pytest.mark.parametrize("survive", SURVIVE)
@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_period_programs_at_scale(size, horizon, survive, monkeypatch):
    inst = period_instance(*size, horizon, survive)
    for code in ("before", "today"):
        if code == "before":
            _before(monkeypatch)
        else:
            monkeypatch.undo()
        settings = SolveSettings.of(inst, time_limit_s=LIMIT_S, mip_gap=1e-3)
        load = f"{os.getloadavg()[0]:.1f}"
        started = time.perf_counter()
        row = ("x".join(map(str, size)), horizon, survive, code)
        try:
            plan = solve_program(inst, settings).plan
        except NoSolution as stopped:
            wall_s = time.perf_counter() - started
            kept = "yes" if wall_s <= 1.1 * LIMIT_S else "no"
            ROWS.append((*row, f"{wall_s:.1f}", load, "no plan", "-", kept, "-", "-", str(stopped)))
            continue
        wall_s = time.perf_counter() - started
        gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.2%}"
        ROWS.append(
            (
                *row,
                f"{wall_s:.1f}",
                load,
                plan.status.split()[0],
                gap,
                "yes" if wall_s <= 1.1 * LIMIT_S else "no",
                "yes",
                f"{plan.cost_per_month:,.0f}",
                plan.solver.method,
            )
        )
