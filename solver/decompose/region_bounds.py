"""A lower bound on each region's cost, from the region's own program, as one row each.

Partition the columns of the program by the region their index names (a pool's replicas
and pooling steps, the GPUs bought there and their servers, the requests served there
and its mode loads: `region_of`). Region r's own program P_r keeps r's columns, with
their bounds, and every row of the whole program that mentions r's columns only (r's
capacity and mode split rows in every scenario, its pools' rows, supply, purchase and
whole servers, and the `none` demand of its own users, whom only r serves), and
minimises the part of the objective on r's columns:

    P_r:  z*_r = min  sum_{j in r} cost_j x_j   subject to the rows of r alone

Any plan x of the whole program, restricted to r's columns, satisfies every row of P_r
(the same rows, on the same values), so its cost in r is at least z*_r, and at least
any proven lower bound z_r <= z*_r (the backend's dual bound). So the row

    region_cost[r]:   sum_{j in r} cost_j x_j  >=  z_r

removes no plan: the optimum and every plan are those of the program without it. This
holds for any partition of the columns, so nothing about the program's families is
assumed; a column whose index names no region belongs to none, and rows that mention
it are in no P_r.

Why: whole servers and one configuration per pool leave the relaxation of the fleet
program far below its optimum (chat-3region: LP bound $203k, optimum $236.5k). Its LP
credits every pool the capacity per replica of its largest useful size, and buys
fractions of servers; P_r must carry r's own users with whole pools and whole servers,
and its bound carries that into the whole program (chat-3region: LP bound +4.8%, nodes
x0.37: tests/bench/test_chat3region_speed.py prints both side by side). The rows are
added to the program a solve runs (solver.decompose.by_workload), never to the program
the plan is read from and priced on.

How far rows of this kind can go: any valid row over one region's columns holds on the
convex hull of that region's plans, so none lifts the bound past the Dantzig-Wolfe bound
by region (the master over convex combinations of each region's plans, held to the
demand rows that name several regions). On chat-3region that bound is $222.6k against
the $236,520 optimum, and the LP with the rows is at $212.9k: the rest of the gap is in
how the regions' whole-server fleets combine across the failure scenarios, which only a
search over more than one region at a time closes (rows over pairs of regions are valid
too and reach $225.4k; tests/bench/test_chat3region_speed.py prints each). Exact over
the regions: each region's cost as a step function of the largest load it carries in a
loss, walked by region MIPs, and a master over those levels held to the Hall rows, proves
the same optimum, but with 94 region MIPs, about 7x the CPU of today's solve
(tests/bench/test_chat3region_value_functions.py).

The region programs are independent of each other and of the warm start's restricted
program (solver.decompose.warm_start): they run in a thread beside it, started before it
(`start_region_rows`; HiGHS releases the interpreter lock while it solves), on every
core but the warm start's, so that on idle cores their time hides behind it. The rows
are those of one program after another: on two cores the programs still run one at a
time with the same time shares, and only a bound proven within its gap makes a row
(`proven_bound`).
"""

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from solver.backends import Backend
from solver.program.build import with_bounds
from solver.program.families import add_row, register
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.program.row_names import Index, parse_name
from solver.settings import SolveSettings

MIN_INTEGERS = 200
"""Integer columns below which the program is solved without the rows (it is quick)."""
REGION_NODES = 500
"""Branch-and-bound nodes each region's program may search (HiGHS; a work limit, not the
clock): a program not proven within them gives no row (`proven_bound`), the same on a
busy machine as on an idle one, so that the rows, and the plan HiGHS ends at among ties,
do not depend on the load. chat-3region's three take 13, 1 and 1 nodes. Before, each had
a quarter of the time left over three: under load us-east's (0.6 s idle) ran past it,
lost its row, and the same instance came out as another plan of the same cost."""
TIME_SHARE = 0.5
"""Most of what is left of the time limit the regions' programs may take together (each
an equal part of it): a guard for a machine too slow for their nodes, and the limit of a
backend that counts no nodes; one stopped by it gives no row (`proven_bound`)."""


@dataclass(frozen=True)
class RegionCostRow(Index):
    """region_cost[r]: the cost on region r's columns is at least its own program's bound."""

    family: ClassVar[str] = "region_cost"
    region: str


REGION_COST = register(
    RegionCostRow,
    "the region costs at least what its own program proves it must",
    "$/month per $/month",
    reported=False,
)


@functools.lru_cache(maxsize=1 << 20)
def region_of(name: str) -> str | None:
    """The region a column's index names (`served[f,w,o,d]`: the serving region d);
    None for a column of no region or a name no index type reads. Kept by name: the
    region programs, the joins and `regions.join.independent` ask it of every column of
    every row (10 x 20 x 6 with region loss: 123,715 readings of its 20,150 columns,
    2.1 s of parsing)."""
    try:
        index = parse_name(name)
    except ValueError:
        return None
    region = getattr(index, "region", None)
    return region if isinstance(region, str) else None


def rows_tried(lp: LinearProgram) -> bool:
    """Whether `region_rows` solves region programs for `lp` (not too small, `MIN_INTEGERS`,
    and at least two regions named), whatever bounds they then prove."""
    if sum(var.integer for var in lp.variables.values()) < MIN_INTEGERS:
        return False
    regions = set()
    for name in lp.variables:
        regions.add(region_of(name))
        if len(regions - {None}) >= 2:
            return True
    return False


def region_programs(lp: LinearProgram) -> dict[str, LinearProgram]:
    """P_r for every region some column names (the module docstring)."""
    columns: dict[str, set[str]] = {}
    for name in lp.variables:
        region = region_of(name)
        if region is not None:
            columns.setdefault(region, set()).add(name)
    programs = {}
    for region, own in columns.items():
        program = LinearProgram(f"{lp.name}@{region}")
        program.variables = {name: lp.variables[name] for name in lp.variables if name in own}
        program.constraints = {
            name: row for name, row in lp.constraints.items() if row.coefficients.keys() <= own
        }
        program.objective = {name: cost for name, cost in lp.objective.items() if name in own}
        programs[region] = program
    return programs


def proven_bound(backend: Backend, program: LinearProgram, settings: SolveSettings) -> float | None:
    """A proven lower bound on `program`'s optimum (its optimum less the gap the backend
    reports), or None unless the backend proves it within its gap in its time: a bound
    from a solve stopped by the clock is valid too, but it differs from run to run with
    the machine's load, and so would the program and the optimum HiGHS ends at among
    ties (the same plan must come out of the same instance). Started from the settings'
    start on the program's columns where there is one (a lever's base plan, whose part
    in the region satisfies every row of the region's program when the lever loosens
    the question): an incumbent to prune by, never a different bound."""
    start = None
    if settings.start is not None and backend.capabilities.warm_start:
        start = {name: v for name, v in settings.start.items() if name in program.variables}
    result = backend.run(program, settings, start=start or None)
    return bound_of(result, program, settings)


def bound_of(result: SolveResult, program: LinearProgram, settings: SolveSettings) -> float | None:
    """The proven lower bound a solve of `program` gives: its optimum less the gap the
    backend reports; where it reports none, less the requested gap for an integer
    program (OPTIMAL means proved within it) and nothing for an LP. None unless it
    was proved: a bound cut short by the clock would make the program, and the plan,
    depend on the machine's load. The one rule for the regions' bound and its rows."""
    if result.termination is not Termination.OPTIMAL or result.objective is None:
        return None
    gap = result.mip_gap
    if gap is None:
        gap = settings.mip_gap if any(v.integer for v in program.variables.values()) else 0.0
    return result.objective - gap * abs(result.objective)


Rows = dict[str, tuple[dict[str, float], float]]
"""Region -> its cost terms and proven bound z_r."""


def region_rows(
    lp: LinearProgram, backend: Backend, settings: SolveSettings, threads: int = 1
) -> Rows:
    """z_r for every region of `lp` whose own program proves a positive bound (none when
    `lp` is small, `MIN_INTEGERS`, or names fewer than two regions), the programs solved
    `threads` at a time. Each program's time share is `TIME_SHARE` of what is left
    divided by the rounds of `threads` it takes: the same share as one after another
    when `threads` is 1, and all of them done within `TIME_SHARE` either way."""
    integers = sum(var.integer for var in lp.variables.values())
    programs = region_programs(lp)
    if integers < MIN_INTEGERS or len(programs) < 2:
        return {}
    solved = {r: p for r, p in programs.items() if p.objective and p.constraints}
    if not solved:
        return {}
    threads = max(1, min(threads, len(solved)))
    rounds = -(-len(solved) // threads)
    left = settings.remaining_s()
    share_s = None if left is None else TIME_SHARE * left / rounds
    limited = settings.limited(share_s).nodes(REGION_NODES).with_duals(False)
    bounds = _each(lambda p: proven_bound(backend, p, limited), list(solved.values()), threads)
    return {
        region: (program.objective, bound)
        for (region, program), bound in zip(solved.items(), bounds, strict=True)
        if bound is not None and bound > 0
    }


def _each(run: Callable, programs: list[LinearProgram], threads: int) -> list:
    """`run` on each program, `threads` at a time, in the programs' order (the executor
    is imported only where threads are asked for: a one-model solve loads no more)."""
    if threads == 1:
        return [run(program) for program in programs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads, thread_name_prefix="fleetplan-region") as pool:
        return list(pool.map(run, programs))


def side_threads(beside_start: bool = True) -> int:
    """Threads for the region programs: beside the warm start every core but one, at
    least one; with nothing beside them (no warm start) every core."""
    return max(1, (os.cpu_count() or 1) - (1 if beside_start else 0))


def start_region_rows(
    base: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    known: dict,
    beside_start: bool = True,
) -> Callable[[], None]:
    """Work out `base`'s rows into `known` (as `with_region_rows` keeps them) in a
    thread, while the caller goes on (the warm start, on the core left to it: the
    region programs take the others, `side_threads`; every core where `beside_start`
    is false and the caller only waits); the returned function waits for them and
    raises what the thread raised. Nothing is started where `known` holds `base`'s
    rows already. Each program stops at `REGION_NODES`, so its bound, and the rows, are
    the same however many run at once."""
    if known.get("lp") is base:
        return lambda: None
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            rows = region_rows(base, backend, settings, side_threads(beside_start))
            known.update(lp=base, rows=rows)
        except BaseException as error:  # handed to the waiting caller
            outcome.append(error)

    backend.is_available()  # loads the library here: two threads loading it at once fail
    thread = threading.Thread(target=work, name="fleetplan-region-rows", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if outcome:
            raise outcome[0]

    return wait


def narrower(lp: LinearProgram, base: LinearProgram) -> bool:
    """Whether every plan of `lp` is, on `base`'s columns, a plan of `base`: `lp` keeps
    every row of `base` and every column of it, integers as integers, within its bounds
    (it may add rows and columns: pool sizes, a pool fixed at 0)."""
    for name, row in base.constraints.items():
        if lp.constraints.get(name) is not row:
            return False
    for name, var in base.variables.items():
        mine = lp.variables.get(name)
        if mine is None or mine.lower < var.lower or (var.integer and not mine.integer):
            return False
        if var.upper is not None and (mine.upper is None or mine.upper > var.upper):
            return False
    return True


def with_region_rows(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    base: LinearProgram | None = None,
    known: dict | None = None,
) -> LinearProgram:
    """A copy of `lp` with region_cost[r] for every region whose own program in `base`
    (default `lp`) proves a positive bound; `lp` itself where there is none, or where
    `lp` is not `narrower` than `base` (the rows hold for plans of `base` only).

    `known`: where the rows of `base` are kept once worked out (a program's
    `region_costs`), so that re-solves of the same program with pools fixed at 0
    (explain's) reuse them: they remain valid bounds on a narrower program."""
    base = lp if base is None else base
    if base is not lp and not narrower(lp, base):
        return lp
    if known is not None and known.get("lp") is base:
        rows = known["rows"]
    else:
        rows = region_rows(base, backend, settings)
        if known is not None:
            known.update(lp=base, rows=rows)
    if not rows:
        return lp
    copy = with_bounds(lp, {})
    for region, (cost, bound) in rows.items():
        add_row(copy, RegionCostRow(region), dict(cost), Sense.GE, bound)
    return copy
