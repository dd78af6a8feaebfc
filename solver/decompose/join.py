"""Joining the parts of a decomposed solve (solver.decompose.by_workload), and mending a join that
asks too much of a shared row.

The parts start as one workload each (or the workloads a shared group template couples).
Their solutions are joined: every part's own columns, and each region's purchases of a
GPU type rounded up on the sum (`joined_purchases`). The join is a plan of the whole
program when every row holds. A row the parts share can fail: two workloads that each
take most of a region's supply of a GPU type, apart, take more than it holds together.
Each round then mends it in these ways, in turn:

- Shares (solver.decompose.join_mend): the largest users of each overfilled supply row are
  re-solved within shares that fit beside the others' use. That is a restriction, so
  the join, once it holds, is a plan of the whole; it is the result when its cost is
  within the gap of the bound the parts gave, and kept as the incumbent otherwise.
- Local merge (solver.decompose.join_mend): where no route joins the row's region to another,
  the users of each overfilled row re-solved together with everything held at the
  join's values but in that region; a restriction too, and there the merged part's
  optimum in the region.
- Giving back (solver.decompose.join_mend): for one overfilled supply row, every user re-solved
  alone giving back the whole excess (or all it uses), and the users that do so
  cheapest per GPU taken until the excess is back; a restriction too.
- Price: each broken supply row gets a price per GPU, its users are re-solved paying it,
  and the sum of the priced parts' bounds less the rows' priced supply is a Lagrangian
  bound on the whole, higher than the parts' own; the priced users take less of the
  row, and their join, when it holds, is a plan (solver.decompose.join_price). A few prices are
  tried (`PRICE_ROUNDS`).
- Merge: the parts whose columns carry each broken row are merged into one part, solved
  again as one program (a relaxation of the whole still: its workloads alone, over the
  whole supply), and the join retried.

    round 1: P_1, ..., P_n                    (one per workload)
    round k: the parts that share a row the join of round k-1 breaks, merged

Merging only groups workloads, so it ends: at worst every workload is in one part,
which is the whole program, and the caller solves that as one (from the incumbent).
The bound stays valid round after round: the final parts partition the workloads, each
part's program is a relaxation of the whole restricted to them, so sum_parts bound(P)
<= the optimum. When no join is proved within the gap before the time is out, the
cheapest join that held is the result, FEASIBLE with its gap against the best bound
(`_Run.incumbent`): a plan stated as unproven rather than none.

Each round after the first solves its merged parts to the gap the settled parts leave
unused (`gap_left`): most close far inside the requested gap, and the join's gap is
what is checked in the end, against the sum of the final parts' bounds.

Measured on the scaling bench's 50 x 50 x 6 instance without failures: the first join
takes more of r25's MI300X than it holds. Shares for its three largest users (re-solved
in 1 s) give a plan $7,847,223/month, 0.2% above the parts' bound of $7,831,190: outside
the 0.1% gap. Its 35 users re-solved together around r25 give $7,833,148, 0.025% above:
the plan, 10.6 s from start. Merging the 35 workloads (the next step) gave a plan in
19.5-25.6 s (16 programs joined, $7,837,061/month, 0.07% gap; the merged program
reduced by solver.candidates.swap_dominance across its workloads, 59 s without), where the whole
program as one took 118-136 s. Tried and dropped as the only mend: re-solving the largest user
within what the others leave ($14k/month above the bound), shares in proportion to use
for every user ($27k above), and the largest users re-solved together within the row
(84 s, $10k above).
"""

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from models.operations.site import gpus_bought, node_gpus
from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds
from solver.candidates.swap_dominance import reduced_program
from solver.decompose.join_mend import (
    cheapest_givers,
    fixed_outside,
    giving_back,
    reach,
    row_use,
    supply_rows,
    supply_shares,
)
from solver.decompose.join_price import (
    Prices,
    first_prices,
    lagrangian_bound,
    next_prices,
    priced_objective,
    result_bound,
    row_users,
)
from solver.decompose.linked import linked_groups
from solver.decompose.parallel import processes_for, solve_built, worth_workers
from solver.decompose.part_backend import part_backend
from solver.decompose.workload_parts import Part, PartSolves, workload_program, workload_sizes
from solver.program.build import FleetProgram
from solver.program.families.pool_sizes import PoolSizeIsColumn
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import Constraint, LinearProgram, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.program.row_names import GpuSupplyRow, GroupsColumn, ReplicasColumn, split_name
from solver.settings import MIN_CALL_S, SolveSettings

FEASIBILITY_TOLERANCE = 1e-6
"""Relative violation of a row tolerated when the join is checked against the whole."""
GAP_KEPT = 0.1
"""Share of the requested gap a merged part's own gap leaves unused (`gap_left`)."""
MEND_ROUNDS = 3
"""Rounds of re-solving parts within supply shares before the join's parts are merged."""
PRICE_ROUNDS = 6
"""Prices tried on the broken supply rows before the parts are merged (`_price`)."""


def solve_by_workload(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None = None,
    started: PartSolves | None = None,
) -> Optimised | None:
    """Solve each part's program apart (within the caller's `bounds`, each reduced to
    the pools and sizes an optimal plan of it needs: solver.candidates.swap_dominance) and join the
    solutions, mending a join that breaks a supply row (the module docstring); with
    `started`, the first round's results come from the workers already solving.

    Returns the joined result when it is feasible for the whole program and within the
    requested gap; the cheapest join that held, FEASIBLE with its gap against the best
    bound, when none was proved within the gap (the time ran out, or the merge ended in
    one part); a result with termination INFEASIBLE when some part alone has no plan
    (then neither has the whole); None when no join held (one part, a join nothing
    mends, a part without a plan in time): the whole must be solved as one.
    """
    bounds = bounds or {}
    left_s = settings.remaining_s()
    run = _Run(program, backend, settings, bounds, time.monotonic() + (left_s or float("inf")))
    parts: list[Part] = list(program.groups.components(program.sets.workloads))
    if len(parts) < 2:
        return None
    run.coupled = {part for part in parts if len(part) > 1}  # by shared group templates
    if started is not None and sorted(started.parts) == sorted(parts):
        backend.prepare(program.lp)  # while the workers solve (the pricing LP is the whole)
        order = started.parts
        found = (
            (order[index], result) for index, result in started.started.results(stop=run.infeasible)
        )
        run.processes = started.processes
    else:
        found = run.solve(parts)
    results = run.collect(found)
    if not isinstance(results, dict):
        return results
    values, owner = _joined(program, parts, results)
    broken = _broken_rows(program.lp, values, bounds, owner)
    if broken is None:
        return None
    found = _mend_or_merge(run, parts, results, values, owner, broken)
    return found if found is not None else run.incumbent()


@dataclass
class _Run:
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
    """Parts some solve of which another solver did (SCIP: solver.decompose.part_backend)."""
    best: "_Join | None" = None
    """The cheapest join that held every row but was not proved within the gap."""
    bound: float = 0.0
    """The best bound the parts' results have given on the whole."""

    @staticmethod
    def infeasible(result: SolveResult) -> bool:
        return result.termination is Termination.INFEASIBLE

    def method(self, join: "_Join | None" = None) -> Method:
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
        found, used = _solve_parts(self, parts, gap, supply or {}, fixed, prices or {})
        self.processes = max(self.processes, used)
        return found

    def collect(
        self, found: Iterable[tuple[Part, SolveResult]]
    ) -> dict[Part, SolveResult] | Optimised | None:
        """The parts' results; an INFEASIBLE result when one has no plan; None when one
        found no plan in time."""
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
    ) -> Optimised | None:
        """The cheapest join that held so far (this one, `values`, a plan of the whole,
        or an earlier one) as the result, when its cost is within the requested gap of
        the best bound the parts' results have given (relaxations of the whole, the
        parts a partition of the workloads); else None, the cheapest kept as the
        incumbent. `mended`: parts re-solved within supply shares to reach `values`."""
        cost = self.program.lp.objective_value(values)
        join = _Join(values, cost, len(parts), self.competing, mended)
        self.bound = max(self.bound, _bound(self.settings, parts, results))
        if self.best is None or join.cost <= self.best.cost:
            self.best = join
        if _gap(self.best.cost, self.bound) > self.settings.mip_gap + 1e-9:
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

    def _result(self, termination: Termination, join: "_Join") -> Optimised:
        solver = self.solver if self.solver[0] else (self.backend.name, self.backend.version())
        found = SolveResult(
            termination=termination,
            solver=solver[0],
            solver_version=solver[1],
            runtime_s=self.runtime_s,
            objective=join.cost,
            values=join.values,
            mip_gap=_gap(join.cost, self.bound),
        )
        optimised = Optimised(
            found,
            self.method(join),
            join.programs,
            self.processes,
            join.competing,
            join.mended,
            len(self.handed),
        )
        return replace(optimised, result=replace(found, message=optimised.description))


@dataclass(frozen=True)
class _Join:
    """A join that holds every row of the whole program."""

    values: dict[str, float]
    cost: float
    programs: int
    """Parts joined."""
    competing: int
    """Parts of workloads merged because they compete for supply."""
    mended: int
    """Parts re-solved within supply shares (solver.decompose.join_mend) to reach it."""


def _mend_or_merge(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> Optimised | None:
    """The join as the result, mending it where it breaks rows: each round first
    re-solves the largest users of the broken supply rows within shares that fit
    (`_mend`), then the users together around the rows' regions (`_local_merge`), then
    each user giving the excess back (`_mend_each`; all three restrictions: plans, not
    bounds), then prices the broken supply rows (`_price`: a
    higher bound, and a plan where the priced join holds), and when none is proved merges the
    parts that carry each broken row and solves the merged ones
    (`_merge_round`, a relaxation: a tighter bound), until a join holds within the gap.
    An INFEASIBLE result when a merged part has no plan; None when no join is proved
    within the gap in time (the run keeps the cheapest that held: `_Run.incumbent`)."""
    while broken:
        for mend in (_mend, _local_merge, _mend_each):  # shares first: quick, and a plan to keep
            mended = mend(run, parts, results, values, owner, broken)
            if mended is not None:
                found = run.joined(parts, results, *mended)
                if found is not None:
                    return found
        if run.out_of_time():
            return None
        found = _price(run, parts, results, values, owner, broken)
        if found is not None:
            return found
        if run.out_of_time():
            return None
        merged = _merge_round(run, parts, results, values, owner, broken)
        if not isinstance(merged, tuple):
            return merged
        parts, results, values, owner, broken = merged
        if broken is None:
            return None
    return run.joined(parts, results, values)


def _local_merge(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by re-solving the parts that share each
    broken supply row together with every column held at the join's value except in the
    row's region (solver.decompose.join_mend.fixed_outside: a restriction, so a plan), and how
    many workloads were; None when a broken row is not a supply row, a route joins its
    region to another (solver.decompose.join_mend.reach), a merged part finds no plan, or the join
    still breaks a row."""
    merged = _merged(parts, broken, owner, values)
    if merged is None or run.out_of_time():
        return None
    regions: set[str] = set()
    for row in broken:
        if split_name(row.name)[0] != GpuSupplyRow.family:
            return None
        region = GpuSupplyRow.parse(row.name).region
        if reach(run.program.sets.routes, region) != {region}:
            return None  # failover joins it to other regions: the local program is large
        regions.add(region)
    groups = [group for group in merged if group not in results]

    def fixed(alone: FleetProgram) -> Bounds:
        return fixed_outside(alone.lp.variables, values, regions)

    joined = {name: value for name, value in values.items() if _per_workload(name)}
    found = run.restricted(run.solve(groups, fixed=fixed))
    if found is None:
        return None
    for result in found.values():
        joined.update((n, v) for n, v in result.values.items() if _per_workload(n))
    joined.update(joined_purchases(run.program, joined))
    if _broken_rows(run.program.lp, joined, run.bounds, owner) != []:
        return None
    return joined, sum(len(group) for group in groups)


def _mend(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by re-solving parts within supply shares
    (solver.decompose.join_mend), and how many parts were; None when the broken rows are not
    all supply rows, a part finds no plan within its shares, or `MEND_ROUNDS` rounds
    leave rows broken (a mended part moved onto another overfilled row)."""
    current = dict(results)
    shares: dict[Part, dict[str, float]] = {}
    for _ in range(MEND_ROUNDS):
        new = supply_shares(broken, values, owner)
        if new is None or run.out_of_time():
            return None
        for part, rows in new.items():
            shares[part] = {**shares.get(part, {}), **rows}
        found = run.restricted(run.solve(list(new), supply=shares))
        if found is None:
            return None
        current.update(found)
        values, owner = _joined(run.program, parts, current)
        broken = _broken_rows(run.program.lp, values, run.bounds, owner)
        if broken is None:
            return None
        if not broken:
            return values, len(shares)
    return None


def _mend_each(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by the users of the one broken supply row
    that give its excess back cheapest (solver.decompose.join_mend.giving_back: each re-solved
    alone giving back as much of it as it uses; `cheapest_givers`), and how many were
    taken; None when more than one row is broken or it is not a supply row, a user finds
    no plan, all together do not give the excess back, or the join still breaks a row."""
    rows = supply_rows(broken)
    if rows is None or len(rows) != 1 or run.out_of_time():
        return None
    row = rows[0]
    excess, shares = giving_back(row, values, owner)
    users = sorted(shares, key=lambda part: (-shares[part][row.name], part))
    found = run.restricted(run.solve(users, supply=shares))
    if found is None:
        return None
    used = row_use(row, values, owner)
    offers = {}
    for part, result in found.items():
        still = row.activity(result.values)  # a part's result holds its own columns only
        extra = (result.objective or 0.0) - (results[part].objective or 0.0)
        offers[part] = (extra, used[part] - still)
    taken = cheapest_givers(offers, excess)
    if taken is None:
        return None
    joined, joined_owner = _joined(run.program, parts, {**results, **{p: found[p] for p in taken}})
    if _broken_rows(run.program.lp, joined, run.bounds, joined_owner) != []:
        return None
    return joined, len(taken)


def _price(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> Optimised | None:
    """The cheapest join that held, proved within the gap by the Lagrangian bound of
    prices on the broken supply rows (solver.decompose.join_price), the priced users' join among
    the joins when it holds; None when the rows are not all supply rows, the mend gave
    no first price, no price within `PRICE_ROUNDS` proves one, or the time is out."""
    rows = supply_rows(broken)
    if rows is None or run.best is None:
        return None
    order = {part: i for i, part in enumerate(parts)}
    users = sorted(row_users(rows, values, owner), key=order.__getitem__)
    extra = run.best.cost - run.program.lp.objective_value(values)
    prices = first_prices(rows, values, extra)
    whole = {part: {row.name: row.rhs for row in rows} for part in users}  # regions priced
    below: dict[str, float] = {}
    for _ in range(PRICE_ROUNDS):
        if prices is None or run.out_of_time():
            return None
        priced = run.restricted(run.solve(users, supply=whole, prices=prices))
        if priced is None:
            return None
        gap = run.settings.mip_gap
        run.bound = max(run.bound, lagrangian_bound(parts, results, priced, rows, prices, gap))
        trial, trial_owner = _joined(run.program, parts, {**results, **priced})
        held = _broken_rows(run.program.lp, trial, run.bounds, trial_owner) == []
        best = run.best
        if held:
            found = run.joined(parts, results, trial, len(users))
        else:
            found = run.joined(parts, results, best.values, best.mended)
        if found is not None:
            return found
        prices, below = next_prices(prices, rows, trial, below)
    return None


def _merge_round(
    run: _Run,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple | Optimised | None:
    """Merge the parts that carry each broken row and solve the merged ones: the new
    parts, results, join values, owners and broken rows (None: no merge mends them);
    an INFEASIBLE result when a merged part has no plan (a relaxation of the whole:
    neither has the whole); None when a broken row has one part or none, every
    workload ends in one part, or a merged part found no plan in time."""
    merged = _merged(parts, broken, owner, values)
    if merged is None or len(merged) < 2:
        return None
    pending = [part for part in merged if part not in results]
    run.competing = sum(1 for p in merged if len(p) > 1 and p not in run.coupled)
    gap = gap_left(run.settings.mip_gap, merged, pending, results)
    found = run.collect(run.solve(pending, gap=gap))
    if not isinstance(found, dict):
        return found
    results = {**results, **found}
    results = {part: results[part] for part in merged}
    values, owner = _joined(run.program, merged, results)
    return merged, results, values, owner, _broken_rows(run.program.lp, values, run.bounds, owner)


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


def _solve_parts(
    run: _Run,
    parts: list[Part],
    gap: float,
    supply: dict[Part, dict[str, float]],
    fixed: "Callable[[FleetProgram], Bounds] | None" = None,
    prices: Prices | None = None,
) -> tuple[Iterator[tuple[Part, SolveResult]], int]:
    """Build, reduce and solve the parts' programs, each within its `supply` shares
    (in worker processes when worth it: each built here while the workers solve the
    ones before), paying `prices` (solver.decompose.join_price), each by its backend
    (solver.decompose.part_backend): (part, result) as each ends, and the processes used."""

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

    def part_settings(_index: int) -> SolveSettings:
        left = max(run.deadline - time.monotonic(), MIN_CALL_S)
        limited = None if run.settings.time_limit_s is None else left
        return replace(run.settings.limited(limited), mip_gap=gap).with_duals(False)

    results = solve_built(build, order, part_settings, processes, run.infeasible)
    return ((parts[index], result) for index, result in results), processes


def _joined(
    program: FleetProgram, parts: list[Part], results: dict[Part, SolveResult]
) -> tuple[dict[str, float], dict[str, Part]]:
    """The join's values (the parts' own columns, and the purchases on their sum), and
    the part each own column comes from."""
    values: dict[str, float] = {}
    owner: dict[str, Part] = {}
    for part in parts:
        for name, value in results[part].values.items():
            if _per_workload(name):
                values[name] = value
                owner[name] = part
    values.update(joined_purchases(program, values))
    return values, owner


def _per_workload(name: str) -> bool:
    """Columns the join takes from a part's solution (purchases are rounded on the
    whole; the size binaries are not the program's)."""
    family = split_name(name)[0]
    return family not in (PurchasedColumn.family, ServersColumn.family, PoolSizeIsColumn.family)


def joined_purchases(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """purchased[r,g] = max(0, used - existing), in whole servers servers[r,g] where
    bought so (models.operations.site.gpus_bought), for the joined replicas."""
    sets = program.sets
    used = {key: 0.0 for key in sets.offers}
    for pool in sets.pools:
        name = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
        count = values.get(name, 0.0)
        used[(pool.region, pool.candidate.gpu)] += round(count) * pool.candidate.gpus
    for t in program.groups.templates:
        for r, g in sets.offers:
            if g == t.gpu:
                count = values.get(GroupsColumn(t.key, r).name(), 0.0)
                used[(r, g)] += round(count) * t.gpus
    purchases = {}
    for (r, g), offer in sets.offers.items():
        n = node_gpus(sets.instance, g)
        bought = gpus_bought(round(used[(r, g)]), offer.existing, n)
        purchases[PurchasedColumn(r, g).name()] = float(bought)
        if ServersColumn(r, g).name() in program.lp.variables:
            purchases[ServersColumn(r, g).name()] = float(bought // n)
    return purchases


def _broken_rows(
    lp: LinearProgram, values: dict[str, float], bounds: Bounds, owner: dict[str, Part]
) -> list[Constraint] | None:
    """The rows of the whole program the join breaks ([] when it is a plan of it); None
    when no merge can mend it: a part's own column out of its bounds, or a purchase out
    of its bounds while no row is broken (whole servers rounded past what is on offer).
    A purchase past its bound with a broken row is the broken supply row's doing."""
    purchase_out = False
    for name, var in lp.variables.items():
        lower, upper = bounds.get(name, (var.lower, var.upper))
        value = values.get(name, 0.0)
        if value < lower - FEASIBILITY_TOLERANCE or (
            upper is not None and value > upper + FEASIBILITY_TOLERANCE
        ):
            if name in owner:
                return None
            purchase_out = True
    broken = []
    for row in lp.constraints.values():
        scale = 1.0 + sum(abs(c * values.get(v, 0.0)) for v, c in row.coefficients.items())
        if row.slack(values) < -FEASIBILITY_TOLERANCE * scale:
            broken.append(row)
    if purchase_out and not broken:
        return None
    return broken


def _merged(
    parts: list[Part], broken: list[Constraint], owner: dict[str, Part], values: dict[str, float]
) -> list[Part] | None:
    """The parts with those that carry each broken row (a nonzero column of it) merged,
    in the program's order; None when a broken row is carried by one part or none (the
    part's own solution breaks it, or only the join's purchases do)."""
    links = []
    for row in broken:
        carrying = {owner[v] for v in row.coefficients if v in owner and values[v] != 0.0}
        if len(carrying) < 2:
            return None
        links.append(carrying)
    order = {w: i for i, w in enumerate(w for part in parts for w in part)}
    merged = [
        tuple(sorted((w for part in group for w in part), key=order.__getitem__))
        for group in linked_groups(parts, links)
    ]
    return sorted(merged, key=lambda part: order[part[0]])


def _bound(settings: SolveSettings, parts: list[Part], results: dict[Part, SolveResult]) -> float:
    """The bound the parts' results give on the whole: sum over the parts of
    objective x (1 - gap)."""
    return sum(result_bound(results[part], settings.mip_gap) for part in parts)


def _gap(cost: float, bound: float) -> float:
    """The relative gap of a plan of `cost` above `bound`."""
    return max((cost - bound) / cost, 0.0) if cost > 0 else 0.0
