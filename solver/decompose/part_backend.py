"""Which solver solves one part of a decomposed solve (solver.decompose.by_workload).

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

from solver.backends import Backend, get_backend
from solver.program.families.hall import HallRow
from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import LinearProgram
from solver.program.row_names import ConfigsPerPoolRow, ReplicaSpareRow

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
