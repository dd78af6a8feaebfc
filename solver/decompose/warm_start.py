"""A first plan to start the branch and bound from: the program with one configuration
per GPU type and phase, solved loosely.

Whole servers and one configuration per pool make the fleet program's relaxation weak:
the LP buys fractions of servers and credits every pool the capacity per replica of its
largest useful size, so its root bound lies well below the optimum (15% on the default
instance, chat-3region). Branch and bound then spends most of its nodes below a poor
incumbent: HiGHS finds the optimum late and prunes the rest at once; given the optimum
as a start, the same search closes in a fraction of the nodes.

The restriction: in every region, for every workload, phase (role and precision) and
GPU type, only the candidate with the lowest price per request/s at the top of its
pooling ladder (price per GPU-hour x GPUs / q_top) keeps its pool; the others' replicas
are fixed at 0. That program is a restriction of the whole (any plan of it is a plan of
the whole), it still chooses GPU types, regions, layouts across types and failover, and
it is several times smaller. Solved to `START_GAP` within its root (`START_NODES`), its
plan is the start of the whole solve (solver.backends, `start`), which is then proven to
the requested gap as before: the optimum is that of the whole program; only the search
is shorter (nodes and seconds: the README's speed notes).

Where the whole program gets region rows and cost levels (solver.decompose.region_bounds,
solver.program.cost_levels) a plain solve no longer looks for this start: with them the
search is no shorter from it (solver.decompose.by_workload.START_BESIDE_REGION_ROWS). A
re-solve from a start whose plan breaks the program's bounds still does.
"""

from dataclasses import replace

from solver.backends import Backend
from solver.program.build import FleetProgram, with_bounds
from solver.program.lp import LinearProgram
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings

Bounds = dict[str, tuple[float, float | None]]

START_GAP = 0.1
"""Relative gap the restricted program is solved to, within `START_NODES`: its plan only
starts the search (chat-3region's, $247,032, is 4.4% above the whole program's $236,520
optimum, which the search then finds)."""
START_NODES = 1
"""Branch-and-bound nodes the restricted solve may search (HiGHS; a work limit): its root
only. Its plan, and so the search it starts, is the same on a busy machine as on an idle
one. The start is the root's incumbent (HiGHS's sub-MIP heuristics find it there); the
nodes after the root raised the restricted program's dual bound towards `START_GAP`,
which nothing reads (the whole program's search proves its own bound) and, on every
shipped instance, found no better plan: chat-3region's restriction searched 11 nodes
after its root (at 200) for the same $247,032.06 plan to the bit, 1.56 against 1.02 s of
CPU (HiGHS 1.16); no other shipped instance is large enough for a warm start
(`START_MIN_INTEGERS`)."""
START_TIME_SHARE = 0.5
"""Most of what is left of the time limit the restricted solve may take: a guard for a
machine too slow for its nodes, and the limit of a backend that counts no nodes."""
START_MIN_INTEGERS = 200
"""Integer variables below which the whole program is solved at once (it is quick)."""


def restricted_bounds(program: FleetProgram, bounds: Bounds | None = None) -> Bounds:
    """Replicas fixed at 0 for every pool but the cheapest per request/s of its region,
    workload, role, precision and GPU type (pools already fixed at 0 by `bounds` are
    not chosen)."""
    sets = program.sets
    bounds = bounds or {}
    best: dict[tuple, tuple[float, str]] = {}
    names = []
    for pool in sets.pools:
        c = pool.candidate
        name = ReplicasColumn(pool.workload, c.key, pool.region).name()
        names.append(name)
        if bounds.get(name, (0.0, None))[1] == 0.0:
            continue
        price = sets.offers[(pool.region, c.gpu)].price_per_gpu_hour
        per_request = price * c.gpus / c.top_requests_per_s
        key = (pool.workload, pool.region, c.role, str(c.precision), c.gpu)
        if key not in best or (per_request, name) < best[key]:
            best[key] = (per_request, name)
    kept = {name for _, name in best.values()}
    return {name: (0.0, 0.0) for name in names if name not in kept}


def warm_start(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None = None,
) -> dict[str, float] | None:
    """The restricted program's plan (values of every column), or None when it is not
    worth it (a small program, a backend that cannot start from a plan, nothing to
    restrict) or finds no plan in its share of the time."""
    lp: LinearProgram = program.lp
    if not backend.capabilities.warm_start:
        return None
    if lp.size()["integer_variables"] < START_MIN_INTEGERS:
        return None
    restricted = restricted_bounds(program, bounds)
    if not restricted:
        return None
    left = settings.remaining_s()
    limited = settings.limited(None if left is None else START_TIME_SHARE * left)
    loose = replace(
        limited.nodes(START_NODES).with_duals(False), mip_gap=max(settings.mip_gap, START_GAP)
    )
    result = backend.run(with_bounds(lp, {**(bounds or {}), **restricted}), loose)
    if not result.termination.has_solution:
        return None
    return dict(result.values)
