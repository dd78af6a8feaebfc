"""The programs of the parts of a decomposed solve (solver.decompose.by_workload): one workload, or
workloads solved together, alone over the whole supply, buying single GPUs; and their
early start in the worker processes while the whole program is built."""

from dataclasses import dataclass, replace

from models.schema.policy import BuyUnit
from solver.backends import Backend
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import CandidateTable
from solver.colocation.groups import GroupTable
from solver.decompose.parallel import Started, processes_for, start_each, worth_workers
from solver.decompose.region_join import first_by_region
from solver.program.build import FleetProgram, build_program
from solver.program.families.hall import copy_hall_rows
from solver.program.lp import SolveResult
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings

Part = tuple[str, ...]
"""The workloads of one part, in the program's order."""


@dataclass(frozen=True)
class PartSolves:
    """Workload programs solving in worker processes since the candidate table was built
    (`start_by_workload`), one per workload in the program's order."""

    parts: tuple[Part, ...]
    started: Started
    processes: int


def start_by_workload(
    sets: ProgramSets, backend: Backend, settings: SolveSettings
) -> PartSolves | None:
    """Hand each workload's program to the worker processes before the whole program is
    built: with two workloads or more, no co-location (no template couples them), and
    replica counts enough to be worth the workers (solver.decompose.parallel.worth_workers) on
    idle cores, unless the solve starts with the regions' programs
    (solver.decompose.region_join.first_by_region: the workers solve those first). None
    otherwise (the join then builds and solves the parts itself)."""
    instance = sets.instance
    workloads = sets.workloads
    if (
        first_by_region(sets)
        or instance.policy.colocation
        or sets.elastic
        or not worth_workers(len(workloads), len(sets.pools))
    ):
        return None
    processes = processes_for(len(workloads))
    size = workload_sizes(sets)
    order = sorted(range(len(workloads)), key=lambda i: -size[workloads[i]])
    arguments = [
        (backend.name, *part_inputs(sets, (workloads[i],)), settings.with_duals(False))
        for i in order
    ]
    started = start_each(solve_part, arguments, processes)
    if started is None:
        return None
    return PartSolves(tuple((workloads[i],) for i in order), started, processes)


def workload_sizes(sets: ProgramSets) -> dict[str, int]:
    """Each workload's replica counts and pooling steps before reduction: how large its
    program is, known before it is built (its integer variables, less what the
    reduction drops), by which the workers are handed the largest first."""
    size = {w: 0 for w in sets.workloads}
    for pool in sets.pools:
        size[pool.workload] += 1 + len(pool.tiers)
    return size


def workload_program(program: FleetProgram, workload: str | Part) -> FleetProgram:
    """The program of one workload (or of several solved together) alone, over the whole
    supply (and the whole power of each site), buying single GPUs: whole servers are
    shared between workloads, so rounding each workload's purchase up to servers on its
    own would not be a relaxation; the join rounds the sum (solver.decompose.join).
    With `scenario_rows: cuts` the part has the whole program's Hall rows of its
    workloads (solver.decompose.scenario_cuts), the same columns in each."""
    part = (workload,) if isinstance(workload, str) else workload
    alone, table, scenarios = part_inputs(program.sets, part)
    rows = program.sets.scenario_rows
    sets = ProgramSets(alone, table, scenarios, scenario_rows=rows)
    groups = program.groups.restricted(part)
    built = build_program(alone, table, scenarios, groups=groups, sets=sets)
    if rows == "cuts":
        copy_hall_rows(program.lp, built.lp, part)
    return built


def part_inputs(sets: ProgramSets, part: Part) -> tuple:
    """(instance, candidate table, scenarios) of the part's program (`workload_program`)."""
    policy = sets.instance.policy.model_copy(update={"buy_unit": BuyUnit.GPU})
    alone = sets.instance.model_copy(
        update={
            "workloads": [w for w in sets.instance.workloads if w.name in part],
            "policy": policy,
        }
    )
    return alone, CandidateTable({w: sets.table.of(w) for w in part}), sets.scenarios


def solve_part(backend: str, instance, table, scenarios, settings: SolveSettings) -> SolveResult:
    """One workload's program built, reduced (solver.candidates.swap_dominance) and solved in a
    worker (one solver thread, SCIP for a large part: solver.decompose.part_backend): what the
    join does for a part in this process."""
    from solver.backends import get_backend
    from solver.decompose.part_backend import part_backend

    lp = reduced_program(build_program(instance, table, scenarios, groups=GroupTable()))
    return part_backend(get_backend(backend), lp).run(lp, replace(settings, threads=1))
