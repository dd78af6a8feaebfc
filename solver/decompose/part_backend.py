"""Which solver solves one part of a decomposed solve (solver.decompose.by_workload).

With the default backend, `highs`, some integer parts are solved by SCIP (the `scip`
backend, through OR-Tools, one thread) where OR-Tools is installed, by what the part's
failure rows are (measured below, not guessed):

- with spare-replica rows (`survive: replica`): SCIP, at any size;
- with zone-survivor rows (`survive: zone`): HiGHS, at any size;
- otherwise (region loss, or none): SCIP from `SCIP_MIN_COLUMNS` columns up.

HiGHS solves the other parts, the whole program when it is solved as one, and the
pricing LP. A backend named other than `highs` solves every part itself. The plan's
`solver.method` says how many parts SCIP solved.

Why: the parts of a large instance with region loss are routing-heavy (each lost
region may reroute every origin: some 13,000 route columns per workload at 50 regions)
around a few hundred replica and pooling-step integers, and HiGHS spends most of its
time on them at the root (cut rounds and sub-MIP heuristics: on one 70B part, 6.7 s
before the first node, 8,567 cuts). SCIP closes the same parts several times faster. On
small parts HiGHS is the faster: SCIP's model set-up costs more than the solve. The
spare-replica rows (capacity less each pool's largest replica) make even small parts
hard, and SCIP closes them faster; the zone-survivor rows (Z x survivors <= (Z - 1) x
replicas, integer: a pool spread over zones less its fullest one) are where HiGHS is
the faster at every size.
Measured on this machine, one thread, every part of the bench's generated instances
(tests/bench; zone loss with 3 zones per region) built, reduced and solved alone to a
0.1% gap:

| instance (regions x workloads x GPU types, survive) | columns per part | HiGHS s | SCIP s |
|---|---|---|---|
| 10 x 20 x 6, region | 670-1,400 | 2.85 | 5.07 |
| 20 x 20 x 6, region | 1,800-4,000 | 8.04 | 5.92 |
| 50 x 50 x 6, region | 12,500-18,400 | 246 | 85 |
| 10 x 20 x 6, replica | 190-720 | 24.3 | 13.1 |
| 20 x 20 x 6, zone | 2,100-5,100 | 48.3 | 101 |
| 50 x 10 x 6, zone: a 70B part, an 8x7B part | 19,600; 16,600 | 78.9; 9.8 | > 120; 1.5 |

On the 50 x 50 region-loss parts SCIP was slower on 13 of 50, by at most 0.2 s; on the
ten 70B parts (about 17,000 columns, 2,000 integers) it took 3.7-13 s where HiGHS took
13-32 s. On the 20 x 20 zone-loss parts SCIP took 16-40 s on the four 70B ones where
HiGHS took 5.5-15 s; on the replica-loss parts it took 1.9-4.0 s on the four 70B ones
where HiGHS took 2.5-9.7 s (one of them slower: 4.0 s against 2.5 s).
"""

from solver.backends import Backend, get_backend
from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import LinearProgram
from solver.program.row_names import ReplicaSpareRow

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
    spare-replica rows always, with zone-survivor rows never, else from
    `SCIP_MIN_COLUMNS` columns up (the measurements above)."""
    if not program.integer_variables:
        return False
    families = {row.family for row in program.constraints.values()}
    if ReplicaSpareRow.family in families:
        return True
    if ZoneSurvivorsIndex.family in families:
        return False
    return len(program.variables) >= SCIP_MIN_COLUMNS
