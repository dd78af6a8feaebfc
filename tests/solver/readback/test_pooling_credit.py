"""The read-back and the pricing LP read every pooling step a pool's replica count reaches
(solver.readback.pricing.credited_program), whichever steps the solver credited.

Two identical pools in two regions (made-up capacities: q(1) = 4.0, q(2) = 4.2, q(4) = 4.4
requests/s a replica), 23 requests/s in each: 5 replicas carry 5 x 4.4 = 22 < 23 even fully
pooled, so each region runs 6, and 6 x q(1) = 24 >= 23 carries the load with no step
credited at all. The solver may so leave a step uncredited; the plan's slack and prices
must not depend on it."""

import pytest

from solver.backends import get_backend
from solver.candidates.table import CandidateTable
from solver.program.build import build_program
from solver.program.lp import Sense, plan_of
from solver.program.row_names import timed_name
from solver.readback.pricing import credited_program, priced_rows, pricing_program
from solver.settings import SolveSettings
from solver.time.periods import build_time_program
from solver.time.readback.prices import credited_hours
from tests.solver.program.test_program import H100, fake
from tests.synthetic import instance, workload

HOURS = 730
PRICES = {"east": 2.4, "west": 2.9}
"""$/GPU-hour of an H100 in each region (peak.yaml's us-east and eu-west)."""
LOAD = 23.0
Q1, Q2, Q4 = 4.0, 4.2, 4.4


def program():
    inst = instance(
        {r: {H100: (64, price)} for r, price in PRICES.items()},
        [workload("chat", {r: LOAD for r in PRICES})],
        policy={"max_configs_per_pool": 1},  # pool_used and the pool_ladder rows
    )
    c = fake("chat", Q1, ladder={2: Q2, 4: Q4})
    return inst, c.key, build_program(inst, CandidateTable({"chat": (c,)}))


def test_every_reached_step_is_credited_whatever_the_solver_left():
    inst, key, prog = program()
    settings = SolveSettings.of(inst, backend="highs", mip_gap=0.0)
    solved = dict(get_backend("highs").run(prog.lp, settings).values)

    def col(family, region, step=None):
        tail = "" if step is None else f",{step}"
        return f"{family}[chat,{key},{region}{tail}]"

    assert solved[col("replicas", "east")] == pytest.approx(6)  # 5 x 4.4 = 22 < 23
    # peak.yaml's read-back: east credited nothing, west q(2) on its 6 replicas
    values = dict(solved)
    for step in (2, 4):
        values[col("pool_at_least", "east", step)] = values[col("pooled", "east", step)] = 0.0
        values[col("pool_at_least", "west", step)] = float(step == 2)
        values[col("pooled", "west", step)] = 6.0 if step == 2 else 0.0
    assert plan_of(prog.lp, values)  # a plan: 6 x 4.0 = 24 >= 23 needs no step

    twin = credited_program(prog, values)
    assert plan_of(prog.lp, twin)
    assert prog.lp.objective_value(twin) == pytest.approx(prog.lp.objective_value(values))
    rows = prog.lp.constraints
    for region in PRICES:
        for step in (2, 4):
            assert twin[col("pool_at_least", region, step)] == 1.0
            assert twin[col("pooled", region, step)] == 6.0  # n_max = 6: 6 x 4.4 >= 23
        # 6 replicas at q(4): 6 x 4.4 - 23 = 3.4 spare in each region (24.0 - 23 and
        # 6 x 4.2 - 23 = 2.2 as read before)
        row = rows[f"capacity[none,chat,{region},unified]"]
        assert row.slack(twin) == pytest.approx(6 * Q4 - LOAD)

    lp = pricing_program(prog, twin)
    duals = priced_rows(get_backend("highs").run(lp, settings.with_duals()))
    price = {r: duals[f"demand[none,chat,{r}]"] for r in PRICES}
    # one more request/s needs 1 / q(4) of a one-GPU replica at the region's $/GPU-hour
    for region, dollars in PRICES.items():
        assert price[region] == pytest.approx(dollars * HOURS / Q4, rel=1e-4)
    assert price["west"] / price["east"] == pytest.approx(2.9 / 2.4, rel=1e-4)


def test_a_pool_whose_twin_would_break_a_row_keeps_the_solvers_credit():
    # A row no family writes today, which a credited step would break (pooled[east,4]
    # <= 0): east keeps what the solver credited; west, which the row leaves alone, is
    # credited in full.
    inst, key, prog = program()
    settings = SolveSettings.of(inst, backend="highs", mip_gap=0.0)
    values = dict(get_backend("highs").run(prog.lp, settings).values)
    east4, west4 = (f"pooled[chat,{key},{r},4]" for r in ("east", "west"))
    values[east4] = values[west4] = 0.0
    values[f"pool_at_least[chat,{key},east,4]"] = 0.0
    prog.lp.add_constraint("guard[east]", "pooled_open", {east4: 1.0}, Sense.LE, 0.0)
    twin = credited_program(prog, values)
    assert twin[east4] == 0.0
    assert twin[f"pool_at_least[chat,{key},east,4]"] == 0.0
    assert twin[west4] == 6.0


def test_an_hourly_plan_is_credited_in_every_period():
    # The same two regions at the peak for 12 hours and at half of it for 12: the periods
    # program's copies of the pools, credited as the static ones (solver.time.readback.prices).
    chat = workload("chat", {r: LOAD for r in PRICES})
    for demand in chat["demand"].values():
        demand["hourly_profile"] = [1.0] * 12 + [0.5] * 12
    inst = instance({r: {H100: (64, price)} for r, price in PRICES.items()}, [chat])
    c = fake("chat", Q1, ladder={2: Q2, 4: Q4})
    prog = build_time_program(inst, CandidateTable({"chat": (c,)}))
    settings = SolveSettings.of(inst, backend="highs", mip_gap=0.0)
    values = dict(get_backend("highs").run(prog.lp, settings).values)
    peak = prog.periods[0].first_hour
    for step in (2, 4):  # east credits nothing at the peak: 6 x 4.0 = 24 >= 23 still
        for family in ("pool_at_least", "pooled"):
            values[timed_name(f"{family}[chat,{c.key},east,{step}]", peak)] = 0.0
    assert plan_of(prog.lp, values)

    twin = credited_hours(prog, values)
    assert plan_of(prog.lp, twin)
    assert prog.lp.objective_value(twin) == pytest.approx(prog.lp.objective_value(values))
    for part in prog.periods:
        hour = part.first_hour
        n = twin[timed_name(f"replicas[chat,{c.key},east]", hour)]
        for step in (2, 4):
            credited = twin[timed_name(f"pooled[chat,{c.key},east,{step}]", hour)]
            assert credited == (n if step <= n else 0.0)
        slack = {
            r: prog.lp.constraints[timed_name(f"capacity[none,chat,{r},unified]", hour)].slack(twin)
            for r in PRICES
        }
        assert slack["east"] == pytest.approx(slack["west"])  # the same pools, the same load
        if hour == peak:  # 6 replicas at q(4): 6 x 4.4 - 23 = 3.4 to spare
            assert slack["east"] == pytest.approx(6 * Q4 - LOAD)
