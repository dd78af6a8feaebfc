"""A re-solve without one chosen pool, started from the base plan and, where it can be,
proven by the base solve's own bound (explain's alternatives: solver.analysis.explain).

P is the base program, L a lower bound on its optimum that the base solve proved (its
objective less its gap: solver.decompose.region_bounds.bound_of), and P_X the program
with pool X's replicas fixed at 0. P_X keeps every row and column of P and only narrows
one column's bounds, so every plan of P_X is a plan of P and

    L  <=  opt(P)  <=  opt(P_X).

Any plan x of P_X of objective c is therefore proven within (c - L) / c of P_X's optimum,
with no search of P_X at all. The plan tried first keeps the base plan y everywhere but
in X's region r: the neighbourhood program N_r(y) (solver.decompose.regions.search.neighbourhood)
frees r's columns and holds every other column at y's value, so its plans, with y
elsewhere, hold every row of P, and with X's replicas at 0 every row of P_X. It is the
size of one region's program (chat-3region: a third of P's integers) and closes in a
fraction of a second; r's users are served again by r's other configurations, with the
other regions' fleets as they are.

    (c - L) / c  <=  requested gap   =>   x is the re-solve's answer, proven to that gap;

Where it is not, the plan tried next keeps y's fleet: F(y), P_X with every GPU bought
and every whole server (the `purchased` and `servers` columns) held at y's values and
every pool of every region free, with the row base_bound below. Its plans are plans of
P_X (only column bounds narrow), so the same test proves them; with the row, HiGHS stops
at the first plan within the gap of L. A pool is often one of several that carry the
same load on the same GPUs, across regions as well as within one: on chat-3region the
three us-east pools whose region alone could not do without them at the base's cost
(the neighbourhood's best $240,608-251,704, the search's often no better within its
share) are each replaced by another layout of the same fleet at the base's $236,520, a
program whose first plan within the gap HiGHS finds in a fraction of a second.

The cheaper of the two plans otherwise starts the search of P_X (`SolveSettings.start`:
an incumbent from its first node, and the restricted warm start skipped), and P_X is
searched with the row

    base_bound[r]:   sum_j cost_j x_j  >=  L  (less `BOUND_SLACK` of it)

which removes no plan of P_X (the inequality above) and lifts the search's first bound
from the LP's to L: where P_X costs no more than the base by more than the gap, the first
incumbent within the gap of L ends the search (chat-3region: the three re-solves the
neighbourhood does not prove took 12.3 s from its plan alone, 5.4 s with the row). The
answer is the same question's, proven to the same gap; only the plan reported among
plans within the gap may differ (the neighbourhood's, which changes region r alone, or
the same fleet's).

The search keeps the base's region_cost rows (solver.decompose.region_bounds), but for
region r's, worked out again on P_X (`own_region_row`): r's own program without X is
the relaxation of P_X on r's columns, so its proven bound is a row that removes no plan
of P_X, and r, having lost a pool, costs more in it (chat-3region's us-east: $78,256 ->
$84,096). It does not lift the search's first bound past L, but the nodes it prunes let
HiGHS prove its plan within the gap sooner: us-east's prefill and unified re-solves
0.76x CPU, summed over three HiGHS seeds (36.8 against 48.7 s). Which plan within the
gap the search stops at moves with it, as it moves with the seed ($240,608 or $242,360
either way).

A program with scenario cuts (solver.decompose.scenario_cuts) is not started this way: its
rows are those the cuts added so far, so a plan of them may break a scenario row not yet
added.
"""

import time
from dataclasses import dataclass, replace
from typing import ClassVar

from solver.analysis.lever_groups import plan_of
from solver.backends import Backend
from solver.backends.base import relative_gap
from solver.decompose.region_bounds import (
    REGION_NODES,
    TIME_SHARE,
    Rows,
    bound_of,
    proven_bound,
    region_of,
    region_programs,
)
from solver.decompose.regions.search import neighbourhood
from solver.program.build import FleetProgram, build_program, with_bounds
from solver.program.families import add_row, register
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.program.row_names import Index, ReplicasColumn, family_of
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings

FROM_BASE = True
"""Whether explain's re-solves start from the base solve (its bound and plan here, its
plan for what the limit on configurations costs); off, the bench's `before`
(tests/bench/test_levers_speed.py)."""
NEIGHBOURHOOD_SHARE = 0.25
"""Most of the re-solve's time the neighbourhood program may take (and then the same
fleet's, of what is left)."""
FLEET = frozenset({PurchasedColumn.family, ServersColumn.family})
"""The column families `same_fleet` holds: the GPUs bought and the whole servers."""
REGION_ROW = True
"""Whether the search of P_X has region r's region_cost row worked out again on P_X
(`own_region_row`); off, the base program's row for r (the bench's before)."""
REGION_GAP = 1e-3
"""The gap r's own program is proven to for `own_region_row` (the comparison's 1% would
give away as much as the row gains: us-east's $84,096 proven to 1% is $83,255)."""
BOUND_SLACK = 1e-6
"""Share of L the base_bound row gives away: a plan at the base's optimum holds it within
the solver's row tolerance, whatever the rounding of the cost terms."""


@dataclass(frozen=True)
class BaseBoundRow(Index):
    """base_bound[r]: the program without a pool of region r costs at least the base
    program's proven bound."""

    family: ClassVar[str] = "base_bound"
    region: str


BASE_BOUND = register(
    BaseBoundRow,
    "the program without a pool costs at least what the base solve proved for it with the pool",
    "$/month per $/month",
    reported=False,
)


@dataclass(frozen=True)
class BaseProof:
    """What the base solve hands each re-solve: its plan (values by column name) and the
    lower bound it proved on the base program's optimum."""

    values: dict[str, float]
    bound: float

    @classmethod
    def of(cls, program: FleetProgram, result: SolveResult, settings: SolveSettings):
        """The base solve's plan and proven bound, or None where it proved none (a plan
        stopped by its time limit) or its program has scenario cuts (the module text), or
        `FROM_BASE` is off."""
        bound = bound_of(result, program.lp, settings)
        if bound is None or program.sets.cut_scenarios or not result.termination.has_solution:
            return None
        if not FROM_BASE:
            return None
        return cls(dict(result.values), bound)


@dataclass(frozen=True)
class Started:
    """The neighbourhood's plan of P_X: its values, objective, and whether the base bound
    proves it within the requested gap (`answer`: the re-solve's result then)."""

    values: dict[str, float]
    objective: float
    answer: SolveResult | None


def start_without(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    var: str,
    base: BaseProof,
) -> Started | None:
    """The plan of P_X that changes X's region alone, else the one that keeps the base's
    fleet (module text), with its answer where the base bound proves it within
    `settings.mip_gap`: the first so proven, else the cheaper as a start; None where
    neither finds a plan in its share of the time."""
    began = time.monotonic()
    narrowed = with_bounds(program.lp, {var: (0.0, 0.0)})
    held = {**base.values, var: 0.0}
    region = region_of(var)
    tries = [lambda: neighbourhood(narrowed, frozenset({region}), held)] if region else []
    tries.append(lambda: same_fleet(narrowed, held, base.bound))
    best = None
    for local in tries:
        started = _tried(local(), narrowed, held, backend, settings, base.bound, began)
        if started is not None and started.answer is not None:
            return started
        if started is not None and (best is None or started.objective < best.objective):
            best = started
    return best


def _tried(
    local: LinearProgram,
    narrowed: LinearProgram,
    held: dict[str, float],
    backend: Backend,
    settings: SolveSettings,
    bound: float,
    began: float,
) -> Started | None:
    """`local` (a program whose plans, with `held` elsewhere, are plans of `narrowed`,
    P_X) solved within `NEIGHBOURHOOD_SHARE` of the time left: its plan of P_X, answered
    where the base `bound` proves it within the gap; None without one."""
    left = settings.remaining_s()
    limited = settings.limited(None if left is None else NEIGHBOURHOOD_SHARE * left)
    found = backend.run(local, limited.with_duals(False))
    if not found.termination.has_solution:
        return None
    values = {**held, **found.values}
    if not plan_of(narrowed, values):
        return None
    objective = narrowed.objective_value(values)
    gap = 0.0 if objective <= bound else relative_gap(objective, bound)
    answer = None
    if gap is not None and gap <= settings.mip_gap:
        answer = replace(
            found,
            termination=Termination.OPTIMAL,
            runtime_s=time.monotonic() - began,
            objective=objective,
            values=values,
            mip_gap=gap,
            message=f"proven by the base plan's bound {bound:,.2f}",
        )
    return Started(values, objective, answer)


def same_fleet(lp: LinearProgram, values: dict[str, float], bound: float) -> LinearProgram:
    """F(y) of the module text: `lp` (P_X) with its `FLEET` columns held at `values` (the
    base plan's) and the row base_bound[fleet], its objective at least `bound` less
    `BOUND_SLACK`, which removes no plan of P_X."""
    held = {name: (values.get(name, 0.0),) * 2 for name in lp.variables if family_of(name) in FLEET}
    fleet = with_bounds(lp, held)
    rhs = bound - BOUND_SLACK * abs(bound) - lp.objective_constant
    add_row(fleet, BaseBoundRow("fleet"), dict(lp.objective), Sense.GE, rhs)
    return fleet


def with_base_bound(
    program: FleetProgram,
    var: str,
    base: BaseProof,
    backend: Backend | None = None,
    settings: SolveSettings | None = None,
) -> FleetProgram:
    """P_X: `program` with pool X's replicas (column `var`) at 0 and the row base_bound[r]
    (module text), r the region of the pool. The regions' proven costs the base solve
    worked out (`FleetProgram.region_costs`) go with it: every plan of P_X is a plan of
    the base program, so they bound it too (and are not worked out again); with a
    `backend` and `settings`, r's own is worked out again on P_X (`own_region_row`)."""
    lp = with_bounds(program.lp, {var: (0.0, 0.0)})
    rhs = base.bound - BOUND_SLACK * abs(base.bound) - program.lp.objective_constant
    add_row(lp, BaseBoundRow(region_of(var) or "-"), dict(program.lp.objective), Sense.GE, rhs)
    known = program.region_costs
    if known.get("lp") is not program.lp:
        return replace(program, lp=lp, region_costs={})
    rows, region = known["rows"], region_of(var)
    if REGION_ROW and backend is not None and settings is not None and region is not None:
        rows = own_region_row(lp, region, rows, backend, settings)
    return replace(program, lp=lp, region_costs={"lp": lp, "rows": rows})


def own_region_row(
    lp: LinearProgram, region: str, rows: Rows, backend: Backend, settings: SolveSettings
) -> Rows:
    """`rows` with region_cost[region] worked out on `lp` (P_X, X's replicas at 0) where
    that proves more than the base program's row: r's own program without X is a
    relaxation of P_X on r's columns as r's own program is of P, so its proven bound is
    a row that removes no plan of P_X (solver.decompose.region_bounds), and without X
    it is higher (chat-3region's us-east: $78,256 -> $84,096). The search then proves
    its first plan within the gap sooner: us-east's two re-solves the neighbourhood
    does not prove, 0.76x CPU summed over three HiGHS seeds (module text), each answer
    within the comparison gap of the other's (tests/bench/test_explain_stages_bench.py)."""
    if not rows:  # the base program has none (a small one: region_bounds.MIN_INTEGERS)
        return rows
    own = region_programs(lp).get(region)
    if own is None or not own.objective or not own.constraints:
        return rows
    left = settings.remaining_s()
    limited = settings.limited(None if left is None else TIME_SHARE * left)
    limited = replace(limited, mip_gap=min(settings.mip_gap, REGION_GAP))
    bound = proven_bound(backend, own, limited.nodes(REGION_NODES).with_duals(False))
    if bound is None or (region in rows and bound <= rows[region][1]):
        return rows
    return {**rows, region: (own.objective, bound)}


def program_without(
    program: FleetProgram, workload: str, key: str, region: str, settings: SolveSettings
) -> FleetProgram:
    """The program in which explain removes the pool of candidate `key` (of `workload`)
    from `region`: `program` itself, or, where pruning dropped candidates that `key`
    dominated, the program over the table with them back
    (solver.candidates.table.CandidateTable.without), built as the base was (its
    scenarios and their rows; no deadline: the re-solves watch it), their replicas held
    at 0 outside `region`. A re-solve of `program` alone could not use them, and read a
    pool whose replacements were pruned as having none ("no plan without it").

    Exact: in every other region `key` is still offered and dominates them, so a plan
    using them there becomes one at the same cost using `key` (the pruning argument of
    solver.candidates.table); for the same reason the base's optimum is that of the new
    program with `key` offered everywhere, and the base bound and plan hold for it as for
    `program` (module text)."""
    sets = program.sets
    table = sets.table.without(workload, key)
    if table is None:
        return program
    own = ProgramSets(
        sets.instance, table, sets.scenarios, sets.elastic, scenario_rows=sets.scenario_rows
    )
    built = build_program(sets.instance, table, settings=replace(settings, deadline=None), sets=own)
    restored = {c.key for c in table.of(workload)} - {c.key for c in sets.table.of(workload)}
    elsewhere = {
        name: (0.0, 0.0)
        for candidate in restored
        for other in sets.regions
        if other != region
        and (name := ReplicasColumn(workload, candidate, other).name()) in built.lp.variables
    }
    return replace(built, lp=with_bounds(built.lp, elsewhere))
