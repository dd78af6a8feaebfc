"""Whole servers coordinated across workloads: a master over server counts whose columns
are the workload programs' plans (a restricted Dantzig-Wolfe master, solved in integers).

With `policy.buy_unit: node` the workloads of a decomposed solve (solver.decompose.join)
share each region's servers: the parts buy single GPUs, and the join rounds each
region's purchase of a GPU type up to whole servers on the sum. Where the workloads pick
different GPU types, or fill servers unevenly, that rounding is far from the best: every
(r, g) a workload opens wastes up to n_g - 1 GPUs. The master chooses one plan per part
among the plans found so far, together with the servers:

    min  sum_{p,k} c_{p,k} z_{p,k} + sum_{r,g} price_{r,g} n_g servers[r,g]
    s.t. sum_k z_{p,k} = 1                                        every part p
         sum_{p,k} u_{p,k,r,g} z_{p,k} - n_g servers[r,g] <= E_{r,g}   every offer (r, g)
         z binary, servers integer in [0, floor(max_gpus / n_g)]

with c_{p,k} the cost of plan k of part p less its purchases (every column of the whole
program's objective but `purchased` and `servers`), u_{p,k,r,g} the GPUs of type g it
runs in region r, E the existing fleet (n_g = 1 and `servers` continuous for an offer
bought in single GPUs). Any choice the master makes is a plan of the whole program once
its rows hold (each column is a plan of its part over the whole supply; the master's
rows are the whole program's supply and purchase rows, and the join checks every other
row: solver.decompose.join_values.broken_rows), so the master's plans are upper bounds.

The first columns are the parts' own optima (single GPUs); then each part's plan on
one GPU type alone (`type_program`), so that the master can line the parts up on one
type per region; then best responses (`response_program`): each part re-solved with
every other part's chosen plan held, buying whole servers for the region's total (the
other parts' GPUs counted as already in use), so a part that can fill the others' spare
slots does so when that is cheaper than servers of its own. The first round answers both
the parts' own join and the master's choice among the one-type plans; later rounds
answer the master's choice, until one finds no cheaper plan or the time is out. The
columns are solved in worker processes when worth it (solver.decompose.parallel).

The bound is not the master's. Dualise the cover rows with lam >= 0 per GPU: the
servers' own problem, min over 0 <= s <= S of (price - lam) n s, is 0 for lam <= price
and negative beyond, so the Lagrangian (the master's LP bound over every column) is
highest at lam = price, where it is the parts' own bound, each buying single GPUs at
the price. Servers are integral in their own subproblem, so no split by workload,
Lagrangian or Dantzig-Wolfe, proves more than the parts' bound; the plan's gap is stated
against the best bound known: the parts', or the whole program's when it is solved from
the master's plan (solver.decompose.by_workload).
"""

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial

from models.operations.site import node_gpus
from solver.backends import Backend
from solver.candidates.swap_dominance import reduced_program
from solver.decompose.join_values import joined_purchases, per_workload
from solver.decompose.parallel import processes_for, solve_built, worth_workers
from solver.decompose.workload_parts import Part, part_backend, workload_program, workload_sizes
from solver.program.build import FleetProgram
from solver.program.families.servers import ServersColumn
from solver.program.families.supply import PurchaseRow
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, Sense, SolveResult
from solver.program.row_names import GpuSupplyRow, ReplicasColumn
from solver.settings import MIN_CALL_S, SolveSettings

MAX_ROUNDS = 6
"""Rounds of master and best responses at most."""
MASTER_MIN_S = 5.0
"""Time the master MIP gets however late it starts (it is small)."""
MASTER_GAP = 1e-5
"""Relative gap the master MIP is solved to (it is small: a binary per plan)."""

Offer = tuple[str, str]


@dataclass(frozen=True)
class Column:
    """One plan of one part: its own columns' values, their cost (purchases aside) and
    the GPUs it runs per offer."""

    part: Part
    values: dict[str, float]
    cost: float
    use: dict[Offer, float]


@dataclass(frozen=True)
class Choice:
    """The master's answer: one column per part, and the join's values (a candidate plan
    of the whole program, purchases rounded to whole servers on the sum)."""

    columns: dict[Part, Column]
    values: dict[str, float]
    cost: float
    plans: int
    """Plans the master chose among."""


def has_servers(program: FleetProgram) -> bool:
    """Whether some offer of the program is bought in whole servers."""
    return any(name.startswith(ServersColumn.family + "[") for name in program.lp.variables)


def column_of(program: FleetProgram, part: Part, result: SolveResult) -> Column:
    """The column of a part's solution: its own columns (not purchases or servers)."""
    objective = program.lp.objective
    own = {n: v for n, v in result.values.items() if per_workload(n) and n in program.lp.variables}
    cost = sum(objective.get(name, 0.0) * value for name, value in own.items())
    return Column(part, own, cost, gpu_use(program, own))


def gpu_use(program: FleetProgram, values: dict[str, float]) -> dict[Offer, float]:
    """GPUs run per offer (r, g) by the replicas in `values` (rounded to whole replicas)."""
    use: dict[Offer, float] = {}
    for pool in program.sets.pools:
        count = round(values.get(ReplicasColumn(*pool_key(pool)).name(), 0.0))
        if count:
            key = (pool.region, pool.candidate.gpu)
            use[key] = use.get(key, 0.0) + count * pool.candidate.gpus
    return use


def pool_key(pool) -> tuple[str, str, str]:
    return pool.workload, pool.candidate.key, pool.region


def coordinate(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    results: dict[Part, SolveResult],
    deadline: float,
) -> Choice | None:
    """The cheapest plan the master finds from the parts' `results` (the first columns)
    and the best responses' columns, in rounds until one finds nothing cheaper or the
    `deadline` (a time.monotonic() reading) passes; None when the master finds none."""
    columns = {part: [column_of(program, part, result)] for part, result in results.items()}
    first = master(program, backend, settings, columns, deadline)
    if first is None:
        return None
    gpus = sorted({g for _, g in program.sets.offers})
    order = sorted(columns, key=lambda p: -first.columns[p].cost)
    jobs = [(part, partial(type_program, program, part, gpu)) for part in order for gpu in gpus]
    for found in solve_columns(program, backend, settings, jobs, deadline):
        _add(columns, found)
    typed = master(program, backend, settings, columns, deadline)
    best = typed if typed is not None and typed.cost < first.cost else first
    answers = [first] if best is first else [first, best]  # the first round answers both
    for _ in range(MAX_ROUNDS):
        if _out(deadline):
            return best
        jobs = [
            (part, partial(response_program, program, answer, part))
            for answer in answers
            for part in sorted(columns, key=lambda p: -answer.columns[p].cost)
        ]
        for found in solve_columns(program, backend, settings, jobs, deadline):
            _add(columns, found)
        chosen = master(program, backend, settings, columns, deadline)
        if chosen is None or chosen.cost >= best.cost * (1 - 1e-9):
            return best
        best = chosen
        answers = [best]
    return best


def solve_columns(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    jobs: list[tuple[Part, Callable[[], LinearProgram]]],
    deadline: float,
) -> Iterator[Column]:
    """The columns of the parts' programs that `jobs` build, solved in worker processes
    when worth it (solver.decompose.parallel), each by the backend a part's program gets
    (solver.decompose.workload_parts.part_backend), until the `deadline`: those with a plan."""
    if not jobs or _out(deadline):
        return

    def build(index: int) -> tuple[LinearProgram, Backend]:
        lp = jobs[index][1]()
        return lp, part_backend(backend, lp)

    def job_settings(_index: int) -> SolveSettings:
        return replace(_until(settings, deadline), threads=1)

    size = workload_sizes(program.sets)
    integers = sum(size[w] for part, _ in jobs for w in part)
    processes = processes_for(len(jobs)) if worth_workers(len(jobs), integers) else 1
    stop = lambda _result: _out(deadline)  # noqa: E731 (the programs not started are dropped)
    for index, solved in solve_built(build, range(len(jobs)), job_settings, processes, stop):
        if solved.termination.has_solution:
            yield column_of(program, jobs[index][0], solved)


def _add(columns: dict[Part, list[Column]], found: Column | None) -> None:
    """Add a column to its part's unless it has one with the same GPU use."""
    if found is not None and all(found.use != c.use for c in columns[found.part]):
        columns[found.part].append(found)


def _out(deadline: float) -> bool:
    return time.monotonic() >= deadline


def _until(settings: SolveSettings, deadline: float, floor_s: float = MIN_CALL_S) -> SolveSettings:
    """The settings of one solver call that ends by `deadline` (at least `floor_s`; no
    limit for an infinite deadline), without duals."""
    left = deadline - time.monotonic()
    limit = None if math.isinf(left) else max(left, floor_s)
    return settings.limited(limit).with_duals(False)


def master(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    columns: dict[Part, list[Column]],
    deadline: float,
) -> Choice | None:
    """The master program over the columns so far (the module docstring), solved; its
    choice joined into the whole program's values. None when it has no solution."""
    lp = LinearProgram("server-master")
    picks: dict[str, Column] = {}
    for index, plans in enumerate(columns.values()):
        names = []
        for k, column in enumerate(plans):
            name = lp.add_variable(f"plan[{index},{k}]", upper=1, integer=True)
            lp.add_objective({name: column.cost})
            picks[name] = column
            names.append(name)
        lp.add_constraint(f"one_plan[{index}]", "one_plan", dict.fromkeys(names, 1.0), Sense.EQ, 1)
    sets = program.sets
    for (r, g), offer in sets.offers.items():
        terms = {n: c.use.get((r, g), 0.0) for n, c in picks.items() if c.use.get((r, g))}
        if not terms:
            continue
        n = node_gpus(sets.instance, g)
        price = program.lp.objective.get(PurchasedColumn(r, g).name(), 0.0)
        bought = lp.add_variable(
            f"servers[{r},{g}]", upper=offer.max_gpus // n, integer=n > 1 and has_servers(program)
        )
        lp.add_objective({bought: price * n})
        terms[bought] = -float(n)
        lp.add_constraint(f"cover[{r},{g}]", "cover", terms, Sense.LE, float(offer.existing))
    quiet = replace(_until(settings, deadline, MASTER_MIN_S), mip_gap=MASTER_GAP)
    solved = backend.run(lp, quiet)
    if not solved.termination.has_solution:
        return None
    chosen = {c.part: c for n, c in picks.items() if solved.values.get(n, 0.0) > 0.5}
    values = {name: value for c in chosen.values() for name, value in c.values.items()}
    values.update(joined_purchases(program, values))
    return Choice(chosen, values, program.lp.objective_value(values), len(picks))


def type_program(program: FleetProgram, part: Part, gpu: str) -> LinearProgram:
    """The part's program on GPU type `gpu` alone (every pool of another type closed),
    so that the master can line the parts up on one type per region."""
    alone = workload_program(program, part)
    closed = {
        ReplicasColumn(*pool_key(pool)).name(): (0.0, 0.0)
        for pool in alone.sets.pools
        if pool.candidate.gpu != gpu
    }
    return reduced_program(alone, closed)


def response_program(program: FleetProgram, choice: Choice, part: Part) -> LinearProgram:
    """The part's best response to the master's choice: its program with every other
    part's chosen plan held, over the supply the others leave, buying whole servers for
    the region's total (the others' GPUs count as in use)."""
    others: dict[Offer, float] = {}
    for other, column in choice.columns.items():
        if other != part:
            for key, gpus in column.use.items():
                others[key] = others.get(key, 0.0) + gpus
    alone = workload_program(program, part)
    lp = reduced_program(alone)
    sets = program.sets
    for (r, g), offer in sets.offers.items():
        held = others.get((r, g), 0.0)
        supply, purchase = GpuSupplyRow(r, g).name(), PurchaseRow(r, g).name()
        if supply in lp.constraints:
            row = lp.constraints[supply]
            lp.constraints[supply] = replace(row, rhs=row.rhs - held)
        if purchase not in lp.constraints:
            continue
        row = lp.constraints[purchase]
        lp.constraints[purchase] = replace(row, rhs=row.rhs + held)
        bought = PurchasedColumn(r, g).name()
        lp.variables[bought] = replace(lp.variables[bought], upper=None)
        n = node_gpus(sets.instance, g)
        if n > 1 and has_servers(program):
            servers = ServersColumn(r, g).name()
            lp.add_variable(servers, upper=offer.max_gpus // n, integer=True)
            lp.add_constraint(
                f"whole_servers[{r},{g}]", "whole_servers", {bought: 1.0, servers: -n}, Sense.EQ, 0
            )
    return lp
