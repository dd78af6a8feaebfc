"""Which solver solves one part of a decomposed solve (solver.decompose).

With the default backend, `highs`, a part whose program (reduced: solver.swap_dominance)
has at least `SCIP_MIN_COLUMNS` columns is solved by SCIP (the `scip` backend, through
OR-Tools, one thread) where OR-Tools is installed; HiGHS solves the smaller parts, the
whole program when it is solved as one, and the pricing LP. A backend named other than
`highs` solves every part itself. The plan's `solver.method` says how many parts SCIP
solved.

Why: the parts of a large instance with region loss are routing-heavy (each lost
region may reroute every origin: some 13,000 route columns per workload at 50 regions)
around a few hundred replica and pooling-step integers, and HiGHS spends most of its
time on them at the root (cut rounds and sub-MIP heuristics: on one 70B part, 6.7 s
before the first node, 8,567 cuts). SCIP closes the same parts several times faster. On
small parts HiGHS is the faster: SCIP's model set-up costs more than the solve.
Measured on this machine, one thread, every part of the bench's generated instances
with region loss built, reduced and solved alone to a 0.1% gap (tests/bench):

| instance (regions x workloads x GPU types) | columns per part | HiGHS s | SCIP s |
|---|---|---|---|
| 10 x 20 x 6 | 670-1,400 | 2.85 | 5.07 |
| 20 x 20 x 6 | 1,800-4,000 | 8.04 | 5.92 |
| 50 x 50 x 6 | 12,500-18,400 | 246 | 85 |

On the 50 x 50 parts SCIP was slower on 13 of 50, by at most 0.2 s; on the ten 70B parts
(about 17,000 columns, 2,000 integers) it took 3.7-13 s where HiGHS took 13-32 s.
"""

from solver.backends import Backend, get_backend
from solver.lp import LinearProgram

SCIP_MIN_COLUMNS = 2_000
"""Columns of a part's program from which SCIP solves it in place of HiGHS (the 10 x 20
parts, where HiGHS is faster, stay below; the 20 x 20 parts, where SCIP is, mostly
above)."""
HANDING_BACKEND = "highs"
"""The backend that hands large parts to SCIP."""


def part_backend(backend: Backend, program: LinearProgram) -> Backend:
    """The backend that solves the part `program` in a solve by `backend`: SCIP for a
    large integer program when `backend` is `highs` and SCIP is available, else
    `backend`."""
    size = program.size()
    if (
        backend.name != HANDING_BACKEND
        or size["variables"] < SCIP_MIN_COLUMNS
        or not size["integer_variables"]
    ):
        return backend
    scip = get_backend("scip")
    return scip if scip.is_available() else backend
