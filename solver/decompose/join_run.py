"""What the rounds of one decomposed solve share (solver.decompose.join): the run's state
(`JoinRun`: deadline, bound, the cheapest join that held, which solver did each part), the
joins that hold every row (`Join`), the parts solved in worker processes
(`solve_parts`), and the gap a merged part may stop at (`gap_left`)."""

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds
from solver.candidates.swap_dominance import reduced_program
from solver.decompose.join_price import Prices, priced_objective
from solver.decompose.join_values import lp_floors, parts_bound, relative_gap
from solver.decompose.parallel import processes_for, solve_built, worth_workers
from solver.decompose.workload_parts import Part, part_backend, workload_program, workload_sizes
from solver.program.build import FleetProgram
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.settings import MIN_CALL_S, SolveSettings

EQUAL_SHARES = True
"""Whether each part gets its share of the time left when it starts (`part_share`);
off, each gets all of it, the bench's `before` (tests/bench/test_tight_limits_bench.py)."""
PART_MIN_S = 0.1
"""Seconds each part's program must get for the first round's parts to be solved at all
(`parts_in_time`); with less the solve goes to the cover at once
(solver.decompose.join). On 10 x 20 x 6 region loss at the defaults (2 cores, load
1.5) a 5 s limit left the 20 parts 0.01-0.03 s each: none found a plan, and building and
stopping them took 1.0 s past the solve's share before the same cover; a part of 450
columns solved to its optimum in 0.14 s. 0: always solved."""
COVER_S_PER_NONZERO = 4e-6
"""Seconds per nonzero of the whole program that the join keeps back from its deadline,
under a time limit, for the cover built after parts the clock stopped
(solver.decompose.join._covered, `cover_reserve_s`). The cover (join_values.cover_join)
took 2.5-3.4 us per nonzero on generated region-loss instances from 1,466 to 323,564
nonzeros (2 cores, load 0.6: 3 x 5 x 3 5 ms, 10 x 20 x 6 0.41-0.49 s, 10 x 40 x 6
1.07-1.21 s), 2.9 us (0.64 s) on 10 x 20 x 6 at the policy defaults (222,896 nonzeros,
load 0.7); and parts stopped at the deadline hand back 0.1-0.2 s after it. Built after
the deadline it ran the solve 0.5-0.9 s past its share and `solve` past its limit (5 s
limit: 5.33 s). 0: nothing kept back (the bench's `before`)."""
GAP_KEPT = 0.1
"""Share of the requested gap a merged part's own gap leaves unused (`gap_left`)."""


@dataclass
class JoinRun:
    """What the rounds of one decomposed solve share."""

    program: FleetProgram
    backend: Backend
    settings: SolveSettings
    bounds: Bounds
    deadline: float
    coupled: set[Part] = field(default_factory=set)
    processes: int = 1
    runtime_s: float = 0.0
    competing: int = 0
    """Parts of workloads merged because they compete for supply."""
    solver: tuple[str, str] = ("", "")
    """The backend's solver and version, as the parts' results name them."""
    handed: set[Part] = field(default_factory=set)
    """Parts some solve of which another solver did (SCIP: solver.decompose.workload_parts,
    `part_backend`)."""
    best: "Join | None" = None
    """The cheapest join that held every row but was not proved within the gap."""
    bound: float = 0.0
    """The best bound known on the whole: the parts' results', or the regions' own
    programs' (solver.decompose.regions.join) where higher."""

    @staticmethod
    def infeasible(result: SolveResult) -> bool:
        return result.termination is Termination.INFEASIBLE

    def method(self, join: "Join | None" = None) -> Method:
        """By coupled workloads where parts hold several (the join's, or this round's)."""
        merged = self.coupled or (join.competing if join is not None else self.competing)
        return Method.BY_COUPLED_WORKLOADS if merged else Method.BY_WORKLOAD

    def solve(
        self,
        parts: list[Part],
        gap: float | None = None,
        supply: dict[Part, dict[str, float]] | None = None,
        fixed: "Callable[[FleetProgram], Bounds] | None" = None,
        prices: Prices | None = None,
    ) -> Iterator[tuple[Part, SolveResult]]:
        """Solve the parts' programs to the relative `gap` (the requested one by
        default), each within its `supply` shares (solver.decompose.join_mend) and the bounds
        `fixed` gives its program, if any, paying `prices` for the GPUs of the rows they
        name (solver.decompose.join_price), in worker processes when worth it."""
        gap = gap or self.settings.mip_gap
        found, used = solve_parts(self, parts, gap, supply or {}, fixed, prices or {})
        self.processes = max(self.processes, used)
        return found

    def collect(
        self, found: Iterable[tuple[Part, SolveResult]], partial: bool = False
    ) -> dict[Part, SolveResult] | Optimised | None:
        """The parts' results; an INFEASIBLE result when one has no plan; None when one
        found no plan in time (with `partial`, the results of the others: the parts
        without are those missing)."""
        results = {}
        for part, result in found:
            self.record(part, result)
            if self.infeasible(result):
                who = part[0] if len(part) == 1 else "+".join(part)
                message = f"{who} alone: infeasible"
                alone = replace(result, runtime_s=self.runtime_s, message=message)
                return Optimised(
                    alone, self.method(), 1, self.processes, self.competing, 0, len(self.handed)
                )
            if not result.termination.has_solution or result.objective is None:
                if partial:
                    continue
                return None
            results[part] = result
        return results

    def restricted(
        self, found: Iterable[tuple[Part, SolveResult]]
    ) -> dict[Part, SolveResult] | None:
        """The results of parts solved within a restriction (a mend), their time counted;
        None when one has no plan (a restriction's, so nothing about the whole)."""
        results = {}
        for part, result in found:
            self.record(part, result)
            if not result.termination.has_solution:
                return None
            results[part] = result
        return results

    def record(self, part: Part, result: SolveResult) -> None:
        """Count a part's solve: its time, and which solver did it."""
        self.runtime_s += result.runtime_s
        if result.solver == self.backend.name:
            self.solver = (result.solver, result.solver_version)
        else:
            self.handed.add(part)

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def joined(
        self,
        parts: list[Part],
        results: dict[Part, SolveResult],
        values: dict[str, float],
        mended: int = 0,
        coordinated: int = 0,
        by_region: int = 0,
        covered: int = 0,
    ) -> Optimised | None:
        """The cheapest join that held so far (this one, `values`, a plan of the whole,
        or an earlier one) as the result, when its cost is within the requested gap of
        the best bound the parts' results have given (relaxations of the whole, the
        parts a partition of the workloads); else None, the cheapest kept as the
        incumbent. `mended`: parts re-solved within supply shares to reach `values`;
        `coordinated`: plans the master over server counts chose among
        (solver.decompose.server_master), 0 when it did not reach `values`; `by_region`:
        regions whose programs bought the servers (solver.decompose.regions.join);
        `covered`: parts whose columns are the cover's (solver.decompose.join_values)."""
        cost = self.program.lp.objective_value(values)
        join = Join(
            values, cost, len(parts), self.competing, mended, coordinated, by_region, covered
        )
        floors = lp_floors(self.program)
        self.bound = max(self.bound, parts_bound(self.settings, parts, results, floors))
        if self.best is None or join.cost <= self.best.cost:
            self.best = join
        if relative_gap(self.best.cost, self.bound) > self.settings.mip_gap + 1e-9:
            return None
        # Proved by this round's parts (the bound), reached by the best join's mends.
        proved = replace(self.best, programs=len(parts), competing=self.competing)
        return self._result(Termination.OPTIMAL, proved)

    def incumbent(self) -> Optimised | None:
        """The cheapest join that held, as a result stopped before its gap was proved
        (FEASIBLE, its gap against the best bound); None when no join held."""
        if self.best is None:
            return None
        return self._result(Termination.FEASIBLE, self.best)

    def _result(self, termination: Termination, join: "Join") -> Optimised:
        solver = self.solver if self.solver[0] else (self.backend.name, self.backend.version())
        found = SolveResult(
            termination=termination,
            solver=solver[0],
            solver_version=solver[1],
            runtime_s=self.runtime_s,
            objective=join.cost,
            values=join.values,
            mip_gap=relative_gap(join.cost, self.bound),
        )
        optimised = Optimised(
            found,
            self.method(join),
            join.programs,
            self.processes,
            join.competing,
            join.mended,
            len(self.handed),
            coordinated=join.coordinated,
            by_region=join.by_region,
            covered=join.covered,
        )
        return replace(optimised, result=replace(found, message=optimised.description))


@dataclass(frozen=True)
class Join:
    """A join that holds every row of the whole program."""

    values: dict[str, float]
    cost: float
    programs: int
    """Parts joined."""
    competing: int
    """Parts of workloads merged because they compete for supply."""
    mended: int
    """Parts re-solved within supply shares (solver.decompose.join_mend) to reach it."""
    coordinated: int = 0
    """Plans the master over server counts chose among to reach it (0: not the master's)."""
    by_region: int = 0
    """Regions whose own programs bought its servers (0: not solver.decompose.regions.join's)."""
    covered: int = 0
    """Parts whose columns are the cover's (solver.decompose.join_values: the clock stopped
    them before a plan or at a dearer one)."""


def gap_left(
    requested: float, parts: list[Part], pending: list[Part], results: dict[Part, SolveResult]
) -> float:
    """The relative gap the pending parts may stop at so that the join can still be
    within the `requested` gap: what the requested gap allows on the whole, less what
    the settled parts' gaps use of it (`GAP_KEPT` of it kept back), over what the
    pending parts cost (estimated from the earlier results of their workloads); never
    below the requested gap. The settled parts are mostly proved to far less than it,
    so a merged part may stop well before the requested gap on its own."""
    settled = [part for part in parts if part not in pending]
    used = sum(results[p].objective * max(results[p].mip_gap or 0.0, 0.0) for p in settled)
    earlier = {w: r.objective / len(p) for p, r in results.items() for w in p}
    pending_cost = sum(earlier.get(w, 0.0) for part in pending for w in part)
    total = pending_cost + sum(results[p].objective for p in settled)
    allowed = requested * total * (1 - GAP_KEPT) - used
    if pending_cost <= 0:
        return requested
    return max(requested, allowed / pending_cost)


def cover_reserve_s(program: FleetProgram, settings: SolveSettings) -> float:
    """Seconds the join keeps back before its deadline for the cover built after parts the
    clock stopped: `COVER_S_PER_NONZERO` x the whole program's nonzeros under a time
    limit, 0 without one."""
    if settings.time_limit_s is None:
        return 0.0
    return COVER_S_PER_NONZERO * program.lp.size()["nonzeros"]


def parts_in_time(run: JoinRun, parts: list[Part]) -> bool:
    """Whether the time to the run's deadline gives each of the `parts` `PART_MIN_S`, run
    `processes` at a time as `solve_parts` would (ceil(parts / processes) rounds); always
    without a time limit."""
    if run.settings.time_limit_s is None or not PART_MIN_S:
        return True
    size = workload_sizes(run.program.sets)
    integers = sum(size[w] for part in parts for w in part)
    processes = processes_for(len(parts)) if worth_workers(len(parts), integers) else 1
    rounds = -(-len(parts) // max(processes, 1))
    return run.deadline - time.monotonic() >= rounds * PART_MIN_S


def part_share(left: float, size: int, waiting: list[int], processes: int) -> float:
    """Seconds a part of `size` integer columns gets when it starts with `left` seconds to
    go and the parts of `waiting` sizes (itself included) still to start, `processes` at
    a time: its size's share of theirs, `processes` of them running side by side,

        left x min(1, processes x size / sum(waiting)),

    at least MIN_CALL_S; all of `left` with EQUAL_SHARES off. A part that ends early
    leaves its time to those after it (each share is taken from what is left then)."""
    if not EQUAL_SHARES:
        return left
    total = sum(waiting) or 1
    return max(left * min(1.0, processes * max(size, 1) / total), MIN_CALL_S)


def solve_parts(
    run: JoinRun,
    parts: list[Part],
    gap: float,
    supply: dict[Part, dict[str, float]],
    fixed: "Callable[[FleetProgram], Bounds] | None" = None,
    prices: Prices | None = None,
) -> tuple[Iterator[tuple[Part, SolveResult]], int]:
    """Build, reduce and solve the parts' programs, each within its `supply` shares
    (in worker processes when worth it: each built here while the workers solve the
    ones before), paying `prices` (solver.decompose.join_price), each by its backend
    (solver.decompose.workload_parts.part_backend): (part, result) as each ends, and the
    processes used.
    Under a time limit each part gets its share of what is left when it starts
    (`part_share`), so that a slow large part leaves the others time to find a plan: a
    join needs a plan of every part, and one stopped early still brings its plan and gap."""

    def build(index: int) -> tuple[LinearProgram, Backend]:
        part = parts[index]
        alone = workload_program(run.program, part)
        own = {name: bound for name, bound in run.bounds.items() if name in alone.lp.variables}
        if fixed is not None:
            own = {**fixed(alone), **own}
        rows = alone.lp.constraints
        shares = {name: gpus for name, gpus in supply.get(part, {}).items() if name in rows}
        lp = reduced_program(alone, own, shares)
        lp = priced_objective(lp, prices) if prices else lp
        return lp, part_backend(run.backend, lp)

    size = workload_sizes(run.program.sets)
    sizes = [sum(size[w] for w in part) for part in parts]
    processes = processes_for(len(parts)) if worth_workers(len(parts), sum(sizes)) else 1
    order = sorted(range(len(parts)), key=lambda i: -sizes[i])  # the largest first

    waiting = set(range(len(parts)))

    def part_settings(index: int) -> SolveSettings:
        left = max(run.deadline - time.monotonic(), MIN_CALL_S)
        share = part_share(left, sizes[index], [sizes[i] for i in waiting], processes)
        waiting.discard(index)
        limited = None if run.settings.time_limit_s is None else share
        return replace(run.settings.limited(limited), mip_gap=gap).with_duals(False)

    results = solve_built(build, order, part_settings, processes, run.infeasible)
    return ((parts[index], result) for index, result in results), processes
