"""Each region's server cost as a whole number of cost units: an integer column to branch on.

With whole servers (policy.buy_unit: node) the GPUs of type g bought in region r are
purchased[r,g] = n_g x servers[r,g] (whole_servers), and the objective prices them at c_g
a GPU, so the region's server cost sum_g c_g n_g servers[r,g] moves in steps: it is a
whole multiple of

    u_r = gcd_g (c_g x n_g)        (in cents; chat-3region: $584 = 8 GPUs x $73 in every region)

at every integer plan. The solved program gets, per such region r,

    cost_level[r]   integer >= 0
    cost_level[r]:  cost_level[r] - sum_g (c_g n_g / u_r) x servers[r,g] >= 0

and its objective prices u_r x cost_level[r] in place of c_g x purchased[r,g] (every other
term stays). Exact: at any integer plan the least cost_level[r] the row allows is
sum_g (c_g n_g / u_r) servers[r,g], a whole number (each coefficient is), so the least
objective over cost_level is the program's objective: the same plans at the same costs,
the same optimum. The LP relaxation is the same too (cost_level equals its row's sum
there), and so is the root bound; what changes is the search: HiGHS may branch on a
region's cost level, "region r costs at most k units or at least k + 1", the variable of
the exact master over regions' cost levels (tests/bench/test_chat3region_value_functions.py),
instead of only on pool steps and server counts one GPU type at a time.
chat-3region, from the solve's start, one thread, 8 seeds: 1,501 -> 350 nodes, median HiGHS
CPU 6.55 -> 3.64 s, every seed faster (tests/bench/test_cost_levels_bench.py prints every
shipped instance side by side; only chat-3region's search has region rows today).
Written as an equality with the cost left on purchased, presolve substitutes the column
away and nothing changes; continuous, it does not help (1,170 nodes): the integrality is
the point.

Added to the program a solve runs only, beside the region rows (solver.decompose.
region_bounds, solver.decompose.by_workload), never to the program the plan is read from
and priced on: `own_result` puts the result back on the program's columns and objective.
An offer whose server does not cost whole cents keeps its cost on purchased (no exact
unit divides it). Where the gcd of a region's servers' costs is under
1 / `MAX_UNITS_PER_SERVER` of its dearest server (too fine a step to branch on: a 72-GPU
GB200 rack beside 8-GPU servers, offered together by a lever that allows every GPU type),
the level covers the most offers a coarser unit divides, at least two, and the others keep
their cost on purchased (`_levelled`); with no two such, the region gets no level.
"""

import math
from dataclasses import dataclass, replace
from typing import ClassVar

from solver.program.build import with_bounds
from solver.program.families import add_row, register
from solver.program.lp import LinearProgram, Sense, SolveResult
from solver.program.row_names import Index, parse_name

MAX_UNITS_PER_SERVER = 100
"""The most cost units one server may cost for a region to get a level column."""


@dataclass(frozen=True)
class CostLevelIndex(Index):
    """cost_level[r]: region r's server cost in whole units u_r (the column and its row)."""

    family: ClassVar[str] = "cost_level"
    region: str


COST_LEVEL = register(
    CostLevelIndex,
    "the region's cost level covers the servers it buys",
    "$/month per cost unit",
    reported=False,
)


@dataclass(frozen=True)
class Level:
    """One region's level: its unit u_r and its servers' units, servers column -> c_g n_g / u_r."""

    region: str
    unit: float
    servers: dict[str, int]
    purchased: tuple[str, ...]
    """The purchased columns whose cost moves onto the level."""


def _cents(value: float) -> int | None:
    """`value` in whole cents, or None where it is not (within 1e-6 of a cent)."""
    cents = round(value * 100)
    return cents if abs(value * 100 - cents) <= 1e-6 * max(1.0, abs(value)) else None


def region_levels(lp: LinearProgram) -> list[Level]:
    """The levels `lp`'s regions can take (the module docstring): every priced
    purchased[r,g] column tied by a whole_servers row to an integer servers column."""
    found: dict[str, list[tuple[str, str, int]]] = {}
    for row in lp.constraints.values():
        if row.family != "whole_servers" or row.sense is not Sense.EQ or row.rhs != 0:
            continue
        index = parse_name(row.name)
        terms = row.coefficients
        purchased = next((n for n, a in terms.items() if a == 1.0), None)
        servers = next((n for n, a in terms.items() if a < 0), None)
        if purchased is None or servers is None or len(terms) != 2:
            continue
        gpus = -terms[servers]
        cost = lp.objective.get(purchased, 0.0)
        cents = _cents(cost * gpus)
        if cost <= 0 or cents is None or gpus != round(gpus) or not lp.variables[servers].integer:
            continue
        found.setdefault(index.region, []).append((purchased, servers, cents))
    levels = []
    for region, found_offers in found.items():
        if (kept := _levelled(found_offers)) is None:
            continue
        offers, unit = kept
        servers = {s: cents // unit for _, s, cents in offers}
        purchased = tuple(p for p, _, _ in offers)
        levels.append(Level(region, unit / 100, servers, purchased))
    return levels


def _levelled(
    offers: list[tuple[str, str, int]],
) -> tuple[list[tuple[str, str, int]], int] | None:
    """The offers whose servers' cost moves onto the region's level, and its unit in cents:
    all of them where their gcd is coarse enough (`MAX_UNITS_PER_SERVER`); else the most
    offers (then the coarsest unit) that some unit, the gcd of one pair of them, divides
    with at most `MAX_UNITS_PER_SERVER` units a server, where at least two are: the
    others keep their cost on purchased (the level stays exact, the step a branch moves
    is then the kept offers'); None where no two are."""

    def fitting(unit: int) -> list[tuple[str, str, int]]:
        return [o for o in offers if o[2] % unit == 0 and o[2] <= MAX_UNITS_PER_SERVER * unit]

    unit = math.gcd(*(cents for _, _, cents in offers))
    if len(fitting(unit)) == len(offers):
        return offers, unit
    units = {math.gcd(a[2], b[2]) for i, a in enumerate(offers) for b in offers[i + 1 :]}
    best = max(units, key=lambda u: (len(fitting(u)), u), default=None)
    if best is None or len(fitting(best)) < 2:
        return None
    return fitting(best), best


def with_cost_levels(
    lp: LinearProgram, start: dict[str, float] | None
) -> tuple[LinearProgram, dict[str, float] | None]:
    """A copy of `lp` with cost_level[r] for every region that has one (`region_levels`),
    and `start` with each level at the least its row allows; `lp` and `start` as they
    are where no region has one."""
    levels = region_levels(lp)
    if not levels:
        return lp, start
    copy = with_bounds(lp, {})
    start = None if start is None else dict(start)
    for level in levels:
        column = CostLevelIndex(level.region).name()
        copy.add_variable(column, integer=True)
        for name in level.purchased:
            del copy.objective[name]
        copy.objective[column] = level.unit
        terms = {column: 1.0, **{s: -float(k) for s, k in level.servers.items()}}
        add_row(copy, CostLevelIndex(level.region), terms, Sense.GE, 0.0)
        if start is not None:
            units = sum(k * round(start.get(s, 0.0)) for s, k in level.servers.items())
            start[column] = float(units)
    return copy, start


def own_result(result: SolveResult, lp: LinearProgram) -> SolveResult:
    """`result` (of a program `with_cost_levels` made from `lp`) on `lp`'s columns, its
    objective `lp`'s at those values (a level above its least, which a solution may
    carry, overstates the cost), its gap against the same proven bound."""
    values = {name: v for name, v in result.values.items() if name in lp.variables}
    if result.objective is None or not values:
        return replace(result, values=values)
    bound = result.bound
    objective = lp.objective_value(values)
    gap = result.mip_gap
    if bound is not None:
        gap = max(0.0, (objective - bound) / max(abs(objective), 1e-9))
    return replace(result, values=values, objective=objective, mip_gap=gap)
