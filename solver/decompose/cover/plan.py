"""The cover itself (solver.decompose.cover's docstring): routing, sizing, raising and
purchases, checked against every row of the program, with its bound."""

import math
from collections import defaultdict
from dataclasses import dataclass

from solver.decompose.cover import sizing
from solver.decompose.cover.bounds import region_bounds
from solver.decompose.cover.rows import Rows, clear_caches, name_parts, pool_values, read_rows
from solver.decompose.cover.sizing import Fleet, Raising, buy_servers, choose, packed, pool_options
from solver.program.lp import LinearProgram, Sense, plan_of


@dataclass(frozen=True)
class Cover:
    """A plan of a program built without a solver (`covering_plan`): its values, their cost, and a
    lower bound on the program's optimum (None where none is stated: a column with a negative
    cost)."""

    values: dict[str, float]
    cost: float
    bound: float | None


def routed_loads(rows: Rows, unit: dict[tuple[str, str], float]) -> tuple[dict, dict[str, float]]:
    """Each demand row's load on its served columns, and the load of each served column that is its
    demand row's only column. Users are served in their own region where they may be; else (their
    region lost) their load first fills what the regions they may reach carry for the workload in
    another scenario, cheapest first (`unit`: the cheapest replica per request/s there), and the
    rest goes to the cheapest of them."""
    values: dict[str, float] = {}
    forced: dict[str, float] = {}
    load: dict[tuple[str, str, str], float] = defaultdict(float)  # (scenario, w, region)
    away = []
    for row in rows.lp.constraints.values():
        if row.family != "demand" or row.sense is not Sense.EQ or not row.coefficients:
            continue
        if any(name_parts(n)[0] != "served" or c <= 0 for n, c in row.coefficients.items()):
            continue  # not a plain choice of where to serve: the cover leaves it broken
        if len(row.coefficients) == 1:
            forced.update((n, row.rhs / c) for n, c in row.coefficients.items())
        home = [n for n in row.coefficients if name_parts(n)[1][2] == name_parts(n)[1][3]]
        if not home:
            away.append(row)
            continue
        values[home[0]] = row.rhs / row.coefficients[home[0]]
        scenario, workload, _, region = name_parts(home[0])[1]
        load[(scenario, workload, region)] += row.rhs
    carried: dict[tuple[str, str], float] = defaultdict(float)
    for (_, workload, region), served in load.items():
        carried[(workload, region)] = max(carried[(workload, region)], served)
    for row in sorted(away, key=lambda r: (-r.rhs, r.name)):
        names = sorted(
            row.coefficients,
            key=lambda n: (unit.get(tuple(name_parts(n)[1][1:4:2]), math.inf), n),
        )
        left = row.rhs
        for name in names:
            scenario, workload, _, region = name_parts(name)[1]
            room = carried[(workload, region)] - load[(scenario, workload, region)]
            taken = min(max(room, 0.0), left)
            if taken > 0:
                values[name] = values.get(name, 0.0) + taken / row.coefficients[name]
                load[(scenario, workload, region)] += taken
                left -= taken
        if left > 0:
            name = names[0]
            scenario, workload, _, region = name_parts(name)[1]
            values[name] = values.get(name, 0.0) + left / row.coefficients[name]
            load[(scenario, workload, region)] += left
            carried[(workload, region)] = max(
                carried[(workload, region)], load[(scenario, workload, region)]
            )
    return values, forced


def covering_plan(lp: LinearProgram) -> Cover | None:
    """A plan of the fleet program `lp` built without a solver, and its bound (the module
    docstring); None when some pool's load fits no configuration within the supply or the values
    are not a plan of `lp` (a family the cover does not value, say)."""
    rows, capacity, cost_of = read_rows(lp)
    unit: dict[tuple[str, str], float] = defaultdict(lambda: math.inf)
    for (workload, region, *_), group in capacity.items():
        for row in group:
            for name, coef in row.coefficients.items():
                if name in cost_of and coef > 0:
                    unit[workload, region] = min(unit[workload, region], cost_of[name] / coef)
    routed, forced = routed_loads(rows, unit)
    options = pool_options(rows, capacity, cost_of, routed)
    plans, fleet, raising = [], Fleet(rows), Raising(rows, capacity)
    for rounded_first in (False, True) if options is not None else ():
        chosen = choose(fleet, options, cost_of, rounded_first)
        if chosen is None:
            continue
        if sizing.PACKED and not rounded_first:
            chosen = packed(fleet, options, cost_of, chosen)
        values = dict(routed)
        for _, pool, count in chosen.values():
            values.update(pool_values(rows, pool, count))
        if not raising.raised(fleet, chosen, values):
            continue
        buy_servers(rows, values)
        values |= {name: var.lower for name, var in lp.variables.items() if name not in values}
        plans.append((lp.objective_value(values), rounded_first, values))
    cover = None
    for cost, _, values in sorted(plans, key=lambda plan: plan[:2]):
        if plan_of(lp, values):
            by_region = region_bounds(rows, capacity, cost_of, forced)
            bound = None if by_region is None else lp.objective_constant + sum(by_region.values())
            cover = Cover(values, cost, bound)
            break
    clear_caches()
    return cover


def bounds_by_region(lp: LinearProgram) -> dict[str, float] | None:
    """The cover's bound region by region (`region_bounds`), without the cover."""
    rows, capacity, cost_of = read_rows(lp)
    bounds = region_bounds(rows, capacity, cost_of, routed_loads(rows, {})[1])
    clear_caches()
    return bounds
