"""A plan of the whole program improved a few regions at a time: a large-neighbourhood
search after the regions' join (solver.decompose.regions.join).

Given a plan y of the whole program and a set S of regions, the neighbourhood program
N_S(y) keeps the columns of S's regions (solver.decompose.region_bounds.region_of) free
and holds every other column at y's value:

    N_S(y):  min  sum_{j in S} cost_j x_j
             s.t. sum_{j in S} a_ij x_j  (sense_i)  b_i - sum_{j not in S} a_ij y_j
                  for every row i that mentions a column of S

A row that mentions no column of S holds as it does for y. So every plan of N_S(y),
with y's values elsewhere, holds every row of the whole program: a plan, and y's own
values on S are one plan of N_S(y) (the search starts there). Its cost is the whole
cost of y less y's cost in S plus N_S's, so a cheaper N_S plan is a cheaper plan.

Where the regions' join is dear: each region's own program buys whole servers for its
own users, and the plan floored at those fleets (solver.decompose.regions.join.floored)
adds what the failover scenarios need on top (whole servers of the type a region has
bought, its spare GPUs filled with replicas for the lost regions' users), where a plan
that changes the servers of two regions at once may cost less: one region buys a
larger server type that carries a lost region's users, the other drops a server it
added for them. One region freed alone keeps the others' capacity as it is, so the
pairs are what the search tries:

    1. rank the regions by their excess, cost_r(y) - z_r (z_r: the region's own
       program's proven bound; the region furthest above it first), and those at
       their bound (within `AT_BOUND` of their cost) by their cost, the largest fleet
       first;
    2. the neighbourhoods are the pairs {lead, partner}, leads in that order, partners
       in the same order, except a pair of two regions at their bounds: each region's
       own rows hold in a pair's program, so no plan of it costs less than the sum of
       their bounds, what they cost within `AT_BOUND` (`worth_trying`); solve every one
       of them from y (`SWEEP`; side by side where cores are idle: each gets its own
       process, solver.decompose.parallel.solve_built), each within `TRY_NODES`
       branch-and-bound nodes;
    3. take the cheapest plan found; the others are merged in, cheapest first, where
       the merged values still hold every row (the regions' changes meet in the
       failover rows they share) and cost less;
    4. after an improvement, rank again and sweep again; stop at the deadline, when the
       plan is within the gap of the bound, or when a sweep found nothing cheaper.

A sweep from one plan finds what the pairs save apart, and the merge adds up those that
fit together: on the 10 x 20 x 6 bench instance two disjoint pairs save $4,789 and
$3,971 from the floored plan, where re-ranking after each improvement (`SWEEP` off)
spent its next pairs on the same lead again (r04 + r09 solved 6 times).

Every limit but the deadline is a count of work, not a clock: the batches are the same
however many cores are idle, and a neighbourhood's program stops at the same node on a
busy machine as on an idle one, so the same plan comes out of the same start wherever
it runs. The deadline (the run's time limit) still stops the search, and then the plan
says so (`Searched.stopped`): what it reached depends on the machine.

The bound is unchanged by the search (it proves nothing): the plan's gap is stated
against the regions' bound, as before.

Where the search ends (the 10 x 20 x 6 bench instance with region loss, from the floored
plan, $705,647; no deadline): at $696,887, 1.70% above the regions' bound, after 43
neighbourhoods in three sweeps (17, 9 and 17; 135 s of CPU), so the plan the default 60 s
limit returns there is the one the search converges to, not one the clock cut short.
Tried there and not kept (lns19): the first sweep's two largest savings, {r07, r09}
$4,789 and {r04, r05} $3,971, share no region but break a Hall row together (each names
4 to 9 of the 10 regions), and the second sweep finds {r04, r05}'s again; the four
solved together from the merged plan ($700,858) found nothing cheaper, at 1 node (23.5 s
of CPU) or at 10 (43.1 s), where the pair alone found its $3,971 in 2.1 s (a larger
program's root leaves HiGHS's sub-MIP at its start). From the converged plan, the 17
pairs worth trying at 10 nodes (66.7 s of CPU in all) found nothing cheaper (each pair's
program stopped 8-15% above its own bound).

Before the search, a plan without a solver (`region_cover`): the cover
(solver.decompose.cover.covering_plan) held at the regions' own plans (`held_at_own`:
each pool the regions chose at least at its count, every other configuration of a phase
it fills closed where one configuration per pool is the rule). The cover alone sizes
every pool by a greedy, largest load first, and buys the whole servers that greedy
rounds up to; held, it sizes only what the regions left unchosen and raises the chosen
pools where a failover (Hall) row is short, one replica at a time, a replica on a server
already paid for first. Its program is the whole with bounds only (a restriction), so
its plan is a plan of the whole, checked against every row as any cover's. It is built
where the clock stopped the floored program (or left it no time), and the cheaper of the
two is kept (solver.decompose.regions.plan.by_region); a 60 s run under load (seed 0)
ended at $702,727 (gap 4.3%) where main's floored plan, stopped, was $1,707,207.
Measured on the 10 x 20 x 6 region-loss instance at the defaults, seeds 0, 1, 2 (the
regions' programs solved to 0.1%): the cover alone $747,754, $787,407, $850,538; held
at the regions' plans $724,394, $759,258, $802,124 (3.1%, 3.6%, 5.7% less; 1.1-1.6 s of
CPU either way); the best plan known for seed 0 (a 60 s run's search) $692,215.
"""

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds
from solver.decompose.cover import Cover, covering_plan
from solver.decompose.parallel import processes_for, solve_built
from solver.decompose.region_bounds import Rows, region_of
from solver.program.build import with_bounds
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import Constraint, LinearProgram, Sense, SolveResult
from solver.program.row_names import ReplicasColumn, split_name
from solver.settings import MIN_CALL_S, SolveSettings

TRY_NODES = 1
"""Branch-and-bound nodes one neighbourhood's program may search (HiGHS; a work limit,
not the clock). On the bench's 10 x 20 x 6 region-loss instance (from the plan floored at
the regions' fleets, $705,647) a pair's root alone takes 1.0-2.3 s of CPU and HiGHS finds
its cheaper plans there (a sub-MIP from the start): the first 8 pairs at 1 node and at
10 nodes found the same three ($3,971, $526 and $234 cheaper), 10 nodes taking 2.1-2.9
s of CPU each, 1 node about 35% less. Side by side at load 2.5 under the default 60 s
limit, 1 node re-solved 29 neighbourhoods ($696,887, 1.70%) where 10 nodes re-solved 12
($701,676, 2.38%) before the time limit cut the search. Under load the 3 s of wall that
limited a pair before ended most pairs inside the root, at the start (load 9: 0 nodes, a
12-16% gap on each of the first 6 pairs; scale17 at load 10: 0 of 45 pairs cheaper)."""
TRY_S = 3.0
"""Time limit of one neighbourhood's program for a backend that counts no nodes
(`Capabilities.node_limit`): its search depends on the machine's load."""
WIDTH = 2
"""Neighbourhoods solved in one batch without `SWEEP`, whatever the cores (a batch's
plans are merged, so its size decides the plan)."""
SWEEP = True
"""Whether a batch is every neighbourhood worth trying (`worth_trying`), all from the
same plan, their plans merged; off, `WIDTH` disjoint ones, ranked again after each
improvement (the bench's `before`)."""
SIZE = 2
"""Regions freed together."""
TRY_GAP = 1e-4
"""Relative gap a neighbourhood program is solved to (on its own cost: a few regions')."""
AT_BOUND = 1e-3
"""Share of a region's cost within which it is taken to be at its own bound (the
regions' programs are proved within such a gap): such regions rank by their cost."""
IMPROVEMENT = 1e-6
"""Relative improvement of the whole cost that counts as one (smaller ones are the
solver's tolerances on near-free columns)."""


@dataclass(frozen=True)
class Searched:
    """The search's best plan (the start when none was cheaper), its cost, and what it
    took: neighbourhoods solved and improvements accepted; `stopped` when the deadline
    ended it before every neighbourhood had been tried (the plan then depends on how
    fast the machine was)."""

    values: dict[str, float]
    cost: float
    tried: int
    improved: int
    stopped: bool = False


def neighbourhood(
    lp: LinearProgram, free: frozenset[str], values: dict[str, float]
) -> LinearProgram:
    """N_S(y) of the module docstring: `lp` with the columns of the regions in `free`
    kept and every other column held at `values` (moved into the right-hand sides).

    The free regions' own bounds are not added as region_cost rows
    (solver.decompose.region_bounds): they let HiGHS prove a pair's optimum sooner where
    the pairs cannot improve, but on the 10 x 20 x 6 bench instance they left it at
    the start in pairs where it found cheaper plans without them."""
    columns = {name for name in lp.variables if region_of(name) in free}
    program = LinearProgram(f"{lp.name}@{'+'.join(sorted(free))}")
    program.variables = {name: var for name, var in lp.variables.items() if name in columns}
    for name, row in lp.constraints.items():
        kept = {n: c for n, c in row.coefficients.items() if n in columns}
        if not kept:
            continue
        if len(kept) == len(row.coefficients):
            program.constraints[name] = row
            continue
        held = sum(c * values.get(n, 0.0) for n, c in row.coefficients.items() if n not in columns)
        program.constraints[name] = Constraint(name, row.family, kept, row.sense, row.rhs - held)
    program.objective = {name: cost for name, cost in lp.objective.items() if name in columns}
    return program


def scores(
    lp: LinearProgram, values: dict[str, float], rows: Rows, over: dict[str, float] | None = None
) -> dict[str, float]:
    """Each region's rank: its `excess` (`over`, worked out where not given) where above
    `AT_BOUND` of its cost, else that share of its cost (a region at its bound ranks by
    its fleet's cost: a larger fleet has more servers that may change)."""
    over = excess(lp, values, rows) if over is None else over
    return {
        region: max(above, AT_BOUND * (above + (rows[region][1] if region in rows else 0.0)))
        for region, above in over.items()
    }


def excess(lp: LinearProgram, values: dict[str, float], rows: Rows) -> dict[str, float]:
    """Each region's cost at `values` less its own program's bound (`rows`, 0 where
    none): how far the plan is above what the region alone must pay."""
    cost: dict[str, float] = {}
    for name, per_unit in lp.objective.items():
        region = region_of(name)
        if region is not None:
            cost[region] = cost.get(region, 0.0) + per_unit * values.get(name, 0.0)
    return {
        region: spent - rows[region][1] if region in rows else spent
        for region, spent in cost.items()
    }


def room(
    lp: LinearProgram, values: dict[str, float], rows: Rows, over: dict[str, float] | None = None
) -> dict[str, float]:
    """Each region's `excess` (`over`, worked out where not given) less `AT_BOUND` of its
    cost at `values`: what freeing it may save beyond the gap its own program was proved
    within (negative at its bound)."""
    over = excess(lp, values, rows) if over is None else over
    return {
        region: above - AT_BOUND * (above + (rows[region][1] if region in rows else 0.0))
        for region, above in over.items()
    }


def worth_trying(hoods: list[frozenset[str]], room: dict[str, float]) -> list[frozenset[str]]:
    """Those of `hoods` that may save more than their regions' proof gaps: the sum of
    their regions' `room` positive. A neighbourhood's plan costs at least the sum of
    its regions' bounds (each region's own rows are among its rows), so the most it
    saves is the sum of their excesses. On the 10 x 20 x 6 bench instance, from the
    floored plan, all 28 pairs of two regions at their bounds found nothing (1.0-2.3 s
    of CPU each), and the 17 with r04 ($15,808 above its bound) or r09 ($4,789) found
    every saving."""
    return [hood for hood in hoods if sum(room.get(region, 0.0) for region in hood) > 0.0]


def ranked_neighbourhoods(over: dict[str, float], size: int = SIZE) -> list[frozenset[str]]:
    """The sets of `size` regions, those with the region furthest above its bound first
    (`over`: `excess`), then their partners in the same order (ties by name)."""
    order = sorted(over, key=lambda region: (-over[region], region))
    if len(order) <= size:
        return [frozenset(order)] if order else []
    seen: dict[frozenset[str], None] = {}
    for i, lead in enumerate(order):
        for others in itertools.combinations(order[:i] + order[i + 1 :], size - 1):
            seen.setdefault(frozenset((lead, *others)), None)
    return list(seen)


def search(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    values: dict[str, float],
    rows: Rows,
    deadline: float,
    good_enough: float = -math.inf,
) -> Searched:
    """The module docstring's search on `lp` from the plan `values`, regions ranked
    against their own programs' bounds (`rows`: solver.decompose.regions.join's), until
    the `deadline` (a time.monotonic() reading), a cost at most `good_enough`, or every
    neighbourhood tried since the last improvement. Every plan it returns holds every
    row of `lp`."""
    best = dict(values)
    cost = lp.objective_value(best)
    tried = improved = 0
    untried = _ranked(lp, best, rows)
    cut = time.monotonic() >= deadline - MIN_CALL_S
    while untried and cost > good_enough and not cut:
        if SWEEP:
            batch, untried = untried, []
        else:
            batch = _disjoint(untried, WIDTH)
            untried = [hood for hood in untried if hood not in batch]
        found, ended = _solve(lp, backend, settings, best, batch, deadline)
        tried += ended
        cut = time.monotonic() >= deadline - MIN_CALL_S
        merged = _merged(lp, best, found)
        if merged is not None and lp.objective_value(merged[0]) < cost * (1 - IMPROVEMENT):
            best, cost, improved = merged[0], lp.objective_value(merged[0]), improved + merged[1]
            untried = _ranked(lp, best, rows)
    stopped = cost > good_enough and (cut or bool(untried))
    return Searched(best, cost, tried, improved, stopped=stopped)


def _ranked(lp: LinearProgram, values: dict[str, float], rows: Rows) -> list[frozenset[str]]:
    """The neighbourhoods of `SIZE` regions worth trying from `values`, in rank order."""
    over = excess(lp, values, rows)  # one pass over the objective for both
    hoods = ranked_neighbourhoods(scores(lp, values, rows, over), SIZE)
    return worth_trying(hoods, room(lp, values, rows, over))


def _disjoint(hoods: Sequence[frozenset[str]], width: int) -> list[frozenset[str]]:
    """Up to `width` of `hoods` in their order, no two sharing a region (so that their
    plans can be merged)."""
    batch: list[frozenset[str]] = []
    for hood in hoods:
        if len(batch) == width:
            break
        if all(hood.isdisjoint(other) for other in batch):
            batch.append(hood)
    return batch or list(hoods[:1])


def _solve(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    values: dict[str, float],
    batch: list[frozenset[str]],
    deadline: float,
) -> tuple[list[tuple[frozenset[str], SolveResult]], int]:
    """Each neighbourhood of `batch` from `values`, side by side where cores are idle,
    within `TRY_NODES` (`TRY_S` for a backend that counts no nodes) and the `deadline`;
    those that found a plan, in the batch's order, and how many were solved (the
    deadline drops those not started)."""
    programs: dict[int, LinearProgram] = {}  # built as each is next (a sweep is long)

    def build(index: int) -> tuple[LinearProgram, Backend]:
        programs[index] = neighbourhood(lp, batch[index], values)
        return programs[index], backend

    try_settings = replace(settings.with_duals(False), mip_gap=TRY_GAP, threads=1)
    counts_nodes = backend.capabilities.node_limit
    if counts_nodes:
        try_settings = try_settings.nodes(TRY_NODES)

    def job_settings(_index: int) -> SolveSettings:
        left = deadline - time.monotonic()
        if counts_nodes:  # the nodes end it; the deadline only caps it
            return try_settings.limited(None if math.isinf(left) else max(left, MIN_CALL_S))
        return try_settings.limited(max(min(TRY_S, left), MIN_CALL_S))

    def start(index: int) -> dict[str, float]:
        return {name: values.get(name, 0.0) for name in programs[index].variables}

    found = solve_built(
        build,
        range(len(batch)),
        job_settings,
        min(len(batch), processes_for(len(batch))),
        stop=lambda _result: time.monotonic() >= deadline - MIN_CALL_S,
        start=start,
    )
    # in the batch's order, not the order the workers ended in: `_merged` keeps the
    # first of two plans of the same cost
    in_order = sorted(found, key=lambda item: item[0])
    solved = [(batch[i], result) for i, result in in_order if result.termination.has_solution]
    return solved, len(in_order)


def _merged(
    lp: LinearProgram,
    values: dict[str, float],
    found: list[tuple[frozenset[str], SolveResult]],
) -> tuple[dict[str, float], int] | None:
    """The cheapest of the neighbourhoods' plans (each with `values` elsewhere), with
    the others' changes merged in where the merged plan holds every row and is cheaper,
    and how many of their plans it took that cost less than `values`; None when none
    was found."""
    plans = sorted(
        ({**values, **result.values} for _hood, result in found),
        key=lp.objective_value,
    )
    if not plans:
        return None
    best = plans[0]
    taken = int(lp.objective_value(best) < lp.objective_value(values))
    for other in plans[1:]:
        changed = {n: v for n, v in other.items() if abs(v - values.get(n, 0.0)) > 1e-9}
        merged = {**best, **changed}
        cheaper = lp.objective_value(merged) < lp.objective_value(best)
        if cheaper and holds(lp, merged, set(changed)):
            best, taken = merged, taken + 1
    return best, taken


def holds(lp: LinearProgram, values: dict[str, float], changed: set[str]) -> bool:
    """Whether `values` holds every row of `lp` that mentions a column in `changed`
    (the others hold as they did), by the join's test (Constraint.broken_by)."""
    return not any(
        row.broken_by(values)
        for row in lp.constraints.values()
        if not changed.isdisjoint(row.coefficients)
    )


def held_at_own(lp: LinearProgram, own: dict[str, float]) -> Bounds:
    """Bounds that hold `lp`'s pools at the regions' plans `own` (values by column name;
    a region without a plan names none): each pool with replicas there at least that
    many (its pool_used at 1 where it has one), and every other pool of a
    configs_per_pool row at most 1 that names a chosen pool closed (its replicas and
    pool_used at 0)."""
    held: Bounds = {}
    chosen: set[str] = set()
    for name, value in own.items():
        if split_name(name)[0] != ReplicasColumn.family or value < 0.5 or name not in lp.variables:
            continue
        var = lp.variables[name]
        held[name] = (max(var.lower, float(round(value))), var.upper)
        used = PoolUsedColumn(*split_name(name)[1][:3]).name()
        chosen.add(used)
        if used in lp.variables:
            held[used] = (1.0, 1.0)
    for row in lp.constraints.values():
        if row.family != "configs_per_pool" or row.sense is not Sense.LE or row.rhs >= 2:
            continue
        if not chosen.intersection(row.coefficients):
            continue
        for used in row.coefficients:
            if used in chosen:
                continue
            held[used] = (0.0, 0.0)
            replicas = ReplicasColumn(*split_name(used)[1][:3]).name()
            if replicas in lp.variables:
                held[replicas] = (0.0, 0.0)
    return held


def region_cover(
    lp: LinearProgram, own: dict[str, float], bounds: Bounds | None = None
) -> Cover | None:
    """The cover of `lp` within `bounds` held at the regions' plans `own`
    (`held_at_own`; the module docstring), or None when it finds no plan so held or
    `own` holds no pool. It states no bound (the cover's own would bound `lp` held, not
    `lp`)."""
    held = held_at_own(lp, own)
    if not held:
        return None
    for name, (lower, upper) in (bounds or {}).items():
        low, up = held.get(name, (lower, upper))
        low = max(low, lower)
        up = upper if up is None else (up if upper is None else min(up, upper))
        if up is not None and low > up + 1e-9:
            return None  # the regions chose a pool the caller's bounds close
        held[name] = (low, up)
    cover = covering_plan(with_bounds(lp, held))
    return None if cover is None else Cover(cover.values, cover.cost, None)
