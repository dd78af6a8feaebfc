"""The programs of the parts of a decomposed solve (solver.decompose.by_workload): one workload, or
workloads solved together, alone over the whole supply, buying single GPUs; and their
early start in the worker processes while the whole program is built; and which solver
solves each part (`part_backend`).

With the default backend, `highs`, some integer parts are solved by SCIP (the `scip`
backend, through OR-Tools, one thread) where OR-Tools is installed, by what the part's
failure rows are (measured, not guessed: the README's speed notes):

- with spare-replica rows (`survive: replica`): SCIP, at any size;
- with zone-survivor rows (`survive: zone`): HiGHS, at any size;
- with one configuration per pool (`configs_per_pool` rows, the policy's default):
  HiGHS, at any size;
- with Hall rows (failover by cut rows: solver.decompose.scenario_cuts): HiGHS, at any
  size;
- otherwise (region loss, or none): SCIP from `SCIP_MIN_COLUMNS` columns up.

HiGHS solves the other parts, the whole program when it is solved as one, and the
pricing LP. A backend named other than `highs` solves every part itself. The plan's
`solver.method` says how many parts SCIP solved.

Why: a part with region loss is routing-heavy (each lost region may reroute every
origin: some 13,000 route columns per workload at 50 regions) around a few hundred replica
and pooling-step integers, and HiGHS spends most of its time on such parts at the root
(cut rounds and sub-MIP heuristics), where SCIP closes them several times faster; on small
parts SCIP's model set-up costs more than the solve, so HiGHS is the faster. The
spare-replica rows (capacity less each pool's largest replica) make even small parts hard,
and SCIP closes them faster; the zone-survivor rows (Z x survivors <= (Z - 1) x replicas,
integer: a pool spread over zones less its fullest one) are where HiGHS is the faster at
every size. With one configuration per pool (a binary per pool that picks its
configuration) HiGHS closes the 10 x 20 x 6 region-loss parts several times faster than
SCIP. A part with Hall rows has no route columns, only the replica and pooling-step
integers and a few hundred Hall rows, and HiGHS closes it faster than SCIP (the
10 x 20 and 20 x 20 x 6 region-loss parts two to four times). The line was drawn from
every part of the scaling bench's instances solved alone by each backend: the README's
speed notes give the times, and `make bench` measures them again
(tests/bench/test_part_backends.py).
"""

from dataclasses import dataclass, replace

from models.schema.policy import BuyUnit
from solver.backends import Backend, get_backend
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import CandidateTable
from solver.colocation.groups import GroupTable
from solver.decompose.parallel import Started, processes_for, start_each, worth_workers
from solver.decompose.regions.plan import first_by_region
from solver.program.build import FleetProgram, build_program
from solver.program.families.hall import HallRow, copy_hall_rows
from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import LinearProgram, SolveResult
from solver.program.row_names import ConfigsPerPoolRow, ReplicaSpareRow
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
    (solver.decompose.regions.plan.first_by_region: the workers solve those first). None
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
    worker (one solver thread, SCIP for a large part: `part_backend`): what the
    join does for a part in this process."""
    lp = reduced_program(build_program(instance, table, scenarios, groups=GroupTable()))
    return part_backend(get_backend(backend), lp).run(lp, replace(settings, threads=1))


SCIP_MIN_COLUMNS = 2_000
"""Columns of a part's program without spare-replica or zone-survivor rows (region loss,
or none) from which SCIP solves it in place of HiGHS (the 10 x 20 region-loss parts,
where HiGHS is faster, stay below; the 20 x 20 ones, where SCIP is, mostly above)."""
HANDING_BACKEND = "highs"
"""The backend that hands parts to SCIP."""


def part_backend(backend: Backend, program: LinearProgram) -> Backend:
    """The backend that solves the part `program` in a solve by `backend`: SCIP where
    `backend` is `highs`, SCIP is available and `hands_to_scip` says so, else
    `backend`."""
    if backend.name != HANDING_BACKEND or not hands_to_scip(program):
        return backend
    scip = get_backend("scip")
    return scip if scip.is_available() else backend


def hands_to_scip(program: LinearProgram) -> bool:
    """Whether SCIP is the faster on this integer program, by its failure rows: with
    spare-replica rows always, with zone-survivor, one-configuration-per-pool or Hall
    rows never, else from `SCIP_MIN_COLUMNS` columns up (the rule above)."""
    if not program.integer_variables:
        return False
    families = {row.family for row in program.constraints.values()}
    if ReplicaSpareRow.family in families:
        return True
    if families & {ZoneSurvivorsIndex.family, ConfigsPerPoolRow.family, HallRow.family}:
        return False
    return len(program.variables) >= SCIP_MIN_COLUMNS
