"""Shadow prices of a plan, and the constraints that bind it.

A MIP has no meaningful duals, and with the cost on the integer decisions the LP with
every integer fixed prices nothing (all its duals are zero). So the pricing LP keeps
the plan's discrete choices and relaxes only the counts:

    pools with no replica in the plan     replicas = 0              (choice fixed)
    pools with replicas                   replicas >= 0             (continuous)
    pool_used, pool_at_least              fixed at the plan's 0/1 (every step reached: below)
    zone_survivors, pooled                continuous

A chosen pool's replicas keep no upper bound of their own: `gpu_supply` already limits
them, and a bound beside it would take the supply's price as a reduced cost instead.
Its optimal duals are d(cost)/d(rhs) for the plan's layout: the marginal $/month of one
more request/s of demand, one more GPU of supply, and so on. A row binds when its slack
at the (integer) plan is zero, or when it has a nonzero price in the pricing LP (integer
rounding leaves slack in rows that still set the cost). Rows with nothing flowing
through them (a disaggregated phase the plan does not use: 0 >= 0) are left out: any
price the LP gives them is degenerate.

A limit binds in whole units when its slack is smaller than the least step its users
can take (solver.plan.binding): for each column with a positive coefficient a in the
`<=` row, its step is a x 1 for an integer column and a x n for a continuous column
tied to an integer one by a two-term equality (purchased[r,g] = n x servers[r,g]); a
column with no such step (it can take any part of the slack), or none that can grow,
leaves the row as it is. The pricing LP has slack in such a row and gives it no price.
Power and rack rows are left to solver.readback.site.whole_unit_power, which reads the
kW from the GPUs installed (a period's `purchased` is not priced in the hourly program).

Both read the plan's equal-cost twin that credits every pooling step its pools reach
(`credited_program`; solver.program.families.pooling.reached_steps says why it is a
plan): the solver may leave a reached step uncredited where its row is slack anyway, and
the slack, binding rows and prices would then read a weaker pool than the one planned
(peak.yaml's two 6 x H100 pools: slack 28.49 and 23.29 requests/s where each has 32.12,
prices 52.83 and 44.39 $/month per request/s out of their GPUs' 2.9/2.4 ratio).
"""

from solver.plan.binding import Binding
from solver.program.build import FleetProgram, with_bounds
from solver.program.families import FAMILIES
from solver.program.families.pooling import PoolAtLeastColumn, reached_steps
from solver.program.families.variables import PoolUsedColumn
from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import Constraint, LinearProgram, Sense, SolveResult
from solver.program.row_names import ReplicasColumn, split_timed

PRICE_TOLERANCE = 1e-6
"""$/month below which a shadow price counts as zero."""
SLACK_TOLERANCE = 1e-6
"""Relative slack below which a row counts as tight."""
SITE_FAMILIES = ("power", "rack_space")
"""Rows whose binding in whole units solver.readback.site states (see the module text)."""


def credited_program(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """`values` with every pooling step its pools reach credited (see the module text)."""
    return credited(program.lp, values, reached_steps(program.sets, values))


def credited(
    lp: LinearProgram, values: dict[str, float], steps: list[dict[str, float]]
) -> dict[str, float]:
    """`values` with each pool's twin columns (`steps`, one dict a pool: `reached_steps`)
    put in, but for a pool whose twin would break a row the plan keeps (none of the
    families today: a guard for a later row that credits a step against its load)."""
    twin = dict(values)
    for columns in steps:
        twin.update(columns)
    owner = {name: i for i, columns in enumerate(steps) for name in columns}
    broken = set()
    for row in lp.constraints.values():
        touched = {owner[name] for name in row.coefficients if name in owner}
        if touched - broken and row.broken_by(twin) and not row.broken_by(values):
            broken |= touched
    for i in broken:
        twin.update({name: values.get(name, 0.0) for name in steps[i]})
    return twin


def pricing_program(program: FleetProgram, values: dict[str, float]) -> LinearProgram:
    """The LP with the plan's discrete choices fixed and replica counts continuous."""
    return with_bounds(program.lp, pricing_bounds(program, values), relax=True)


def pricing_bounds(
    program: FleetProgram, values: dict[str, float]
) -> dict[str, tuple[float, float | None]]:
    """The bounds that fix the plan's discrete choices (see the module text); every other
    integer column is relaxed by `with_bounds(..., relax=True)`. The hourly pricing LP
    (solver.time.readback.prices) applies them to every period's copy of the program."""
    sets = program.sets
    bounds: dict[str, tuple[float, float | None]] = {}
    for pool in sets.pools:
        w, key, r = pool.workload, pool.candidate.key, pool.region
        names = [ReplicasColumn(w, key, r).name()]
        if r in sets.zone_regions:
            names.append(ZoneSurvivorsIndex(w, key, r).name())
        chosen = round(values.get(names[0], 0.0)) > 0
        for name in names:
            bounds[name] = (0.0, None if chosen else 0.0)
        fixed = [PoolAtLeastColumn.of(pool, tier.replicas).name() for tier in pool.tiers]
        if sets.needs_pool_used:
            fixed.append(PoolUsedColumn(w, key, r).name())
        for name in fixed:
            level = float(round(values.get(name, 0.0)))
            bounds[name] = (level, level)
    return bounds


def binding_constraints(
    program: FleetProgram, values: dict[str, float], duals: dict[str, float]
) -> tuple[Binding, ...]:
    """Rows of reported families that are tight at the plan or priced by the pricing LP,
    most expensive first."""
    return binding_rows(program.lp, values, duals)


def binding_rows(
    lp: LinearProgram, values: dict[str, float], duals: dict[str, float]
) -> tuple[Binding, ...]:
    """`binding_constraints` over any program's rows (the hourly program's too: a row in a
    period states it as `Binding.period`, its name marked `capacity[...]@t07`)."""
    found = []
    links = None
    for row in lp.constraints.values():
        family = FAMILIES.get(row.family)
        if family is None or not family.reported:
            continue
        if is_idle(row, values):
            continue  # nothing flows through it: any price it has is degenerate
        tight = row.sense is not Sense.EQ and is_tight(row, values)
        price = duals.get(row.name, 0.0)
        if abs(price) <= PRICE_TOLERANCE:
            price = 0.0
        step: tuple[float, str] | None = None
        if not (tight or price) and row.sense is Sense.LE and row.family not in SITE_FAMILIES:
            links = integer_links(lp) if links is None else links
            step = whole_unit(lp, row, values, links)
        if tight or price or step:
            _, period, month = split_timed(row.name)
            found.append(
                Binding(
                    name=row.name,
                    family=family.name,
                    description=family.description,
                    slack=0.0 if is_tight(row, values) else row.slack(values),
                    shadow_price=price,
                    unit=family.dual_unit,
                    period=period,
                    month=month,
                    whole_unit=step[0] if step else 0.0,
                    whole_unit_of=step[1] if step else "",
                )
            )
    return tuple(sorted(found, key=lambda b: (-abs(b.shadow_price), not b.in_whole_units, b.name)))


def integer_links(lp: LinearProgram) -> dict[str, tuple[float, str]]:
    """Continuous column -> (n, integer column) where a two-term equality with a zero
    right-hand side ties them: x - n y = 0 (purchased[r,g] = n x servers[r,g])."""
    links = {}
    for row in lp.constraints.values():
        if row.sense is not Sense.EQ or row.rhs != 0 or len(row.coefficients) != 2:
            continue
        (x, a), (y, b) = row.coefficients.items()
        if lp.variables[x].integer == lp.variables[y].integer:
            continue
        if lp.variables[x].integer:
            (x, a), (y, b) = (y, b), (x, a)
        links[x] = (abs(b / a), y)
    return links


def whole_unit(
    lp: LinearProgram,
    row: Constraint,
    values: dict[str, float],
    links: dict[str, tuple[float, str]],
) -> tuple[float, str] | None:
    """(the least step of the `<=` row's left-hand side, `one` and the integer column
    whose one unit it is) when it is more than the row's slack: the row binds in whole units (see
    the module text); None otherwise."""
    steps = []
    for name, coef in row.coefficients.items():
        if coef <= 0:
            continue
        var = lp.variables[name]
        n, unit = (1.0, name) if var.integer else links.get(name, (0.0, name))
        if n == 0.0:
            return None  # a continuous column takes any part of the slack
        top = lp.variables[unit].upper
        if top is not None and values.get(unit, 0.0) + 1 > top + SLACK_TOLERANCE:
            continue  # at its bound: no more of it can be had
        steps.append((coef * n, f"one {unit}"))
    if not steps:
        return None
    step = min(steps)
    slack = row.slack(values)
    margin = SLACK_TOLERANCE * (1.0 + activity(row, values))
    return step if margin < slack < step[0] - margin else None


def activity(row: Constraint, values: dict[str, float]) -> float:
    """sum |coef x value| over the row's terms: how much flows through it."""
    return sum(abs(c * values.get(v, 0.0)) for v, c in row.coefficients.items())


def is_idle(row: Constraint, values: dict[str, float]) -> bool:
    """A row reading 0 >= 0 at the plan (a phase or pool the plan does not use)."""
    return row.rhs == 0 and activity(row, values) <= SLACK_TOLERANCE


def is_tight(row: Constraint, values: dict[str, float]) -> bool:
    """Whether the row's slack at the plan is zero, relative to what flows through it."""
    return abs(row.slack(values)) <= SLACK_TOLERANCE * (1.0 + activity(row, values))


def priced_rows(result: SolveResult) -> dict[str, float]:
    """The duals of a pricing solve (empty when the backend gave none)."""
    return dict(result.duals) if result.termination.has_solution else {}
