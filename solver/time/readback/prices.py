"""Shadow prices of an hourly plan, and the constraints that bind it.

As for a static plan (solver.readback.pricing), the periods program (solver.time.periods)
is priced as an LP with the plan's discrete choices fixed and its counts continuous:

    in every period p, the static rule on its copy of the program
        (solver.readback.pricing.pricing_bounds: a pool with no replica stays at 0,
        a chosen pool's replicas are continuous, pool_used and pool_at_least keep
        the plan's 0/1)
    every other binary of the periods program (spot_open) keeps the plan's 0/1
    whole servers (committed_servers, on_demand_servers, servers), started, spot and
        dedicated batch replicas: continuous

Its optimal duals are d(cost)/d(rhs) for the plan's layout, period by period:
`gpu_cover[us-east,h100-sxm]@t12` is what one more owned GPU in the period starting at
UTC hour 12 would save per month, `capacity[none,chat,us-east,unified]@t12` what one
more request/s of that period's warm load costs. Each binding row states its period (and
in a horizon its month) as typed fields beside its name (`Binding.period`, `.month`).

A region's power_kw (and racks) is the right-hand side of its site row in every period,
so its price is the sum over the periods:

    d cost / d power_kw[r] = sum_p dual(power[r]@p)          $/month per kW

which is what the plan's power table states (`site_duals`).
"""

from solver.backends.compile_memo import NUMPY_ROWS
from solver.plan.records import Binding
from solver.plan.schema import NO_SHADOW_PRICES
from solver.program.build import with_bounds
from solver.program.families.pooling import reached_steps
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.row_names import PowerRow, RackSpaceRow, timed_name
from solver.readback.pricing import binding_rows, credited, priced_rows, pricing_bounds
from solver.time.periods import TimeProgram

PRICED_NOTE = (
    "hourly plan: shadow prices from the periods program as an LP with the plan's discrete "
    "choices fixed (pools chosen, 0/1 decisions) and counts continuous, period by period "
    "(a row's period is its first UTC hour, @tHH in its name); power and racks summed over "
    "the periods"
)
UNPRICED_NOTE = (
    f"hourly plan: {NO_SHADOW_PRICES} (the pricing LP of the periods program ended {{}}; raise "
    "--time-limit to have them)"
)


def credited_hours(program: TimeProgram, values: dict[str, float]) -> dict[str, float]:
    """`values` with every pooling step each period's pools reach credited, in every
    period (the static rule, solver.readback.pricing.credited_program, on each period's
    copy of the program): what the pricing LP and the read-back read."""
    steps = [
        {timed_name(name, part.first_hour): level for name, level in columns.items()}
        for part in program.periods
        for columns in reached_steps(
            part.program.sets, program.period_values(values, part.first_hour)
        )
    ]
    return credited(program.lp, values, steps)


def pricing_lp(program: TimeProgram, values: dict[str, float]) -> LinearProgram:
    """The periods program with the plan's discrete choices fixed (see the module text)."""
    bounds: dict[str, tuple[float, float | None]] = {}
    for part in program.periods:
        hour = part.first_hour
        own = program.period_values(values, hour)
        for name, bound in pricing_bounds(part.program, own).items():
            bounds[timed_name(name, hour)] = bound
    for name in program.lp.integer_variables:
        var = program.lp.variables[name]
        if name not in bounds and var.upper == 1:
            level = float(round(values.get(name, 0.0)))
            bounds[name] = (level, level)
    priced = with_bounds(program.lp, bounds, relax=True)
    priced.rows_memo = NUMPY_ROWS  # a whole program (solver.backends.compile_memo)
    return priced


def priced_hours(result: SolveResult) -> tuple[dict[str, float], str]:
    """(the pricing LP's duals by row name, the plan's shadow-price note) from its
    result; no duals and a note saying why when the LP did not end optimal."""
    if result.termination is not Termination.OPTIMAL:
        return {}, UNPRICED_NOTE.format(str(result.termination))
    return priced_rows(result), PRICED_NOTE


def hour_bindings(
    program: TimeProgram, values: dict[str, float], duals: dict[str, float]
) -> tuple[Binding, ...]:
    """The periods program's rows tight at the plan or priced, most expensive first."""
    return binding_rows(program.lp, values, duals)


def site_duals(program: TimeProgram, duals: dict[str, float]) -> dict[str, float]:
    """power[r] and rack_space[r] -> the sum of their periods' duals (see the module text),
    under the static row names that solver.readback.site.region_power reads."""
    summed: dict[str, float] = {}
    for region in program.instance.regions:
        for row in (PowerRow(region.name), RackSpaceRow(region.name)):
            names = (row.at(part.first_hour).name() for part in program.periods)
            prices = [duals[name] for name in names if name in duals]
            if prices:
                summed[row.name()] = sum(prices)
    return summed
