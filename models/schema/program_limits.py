"""The limits on the size of the program fleetplan builds and solves, each with the reason
it is where it is (models.schema.limits holds the limits on the input itself; the
program-size check, solver.candidates.size_check, reads these and nothing else)."""

from models.schema.limits import Most

CONFIGURATIONS = Most(
    100_000,
    "replica configurations to evaluate",
    "each costs ~1.7 ms of physics (880 took 1.5 s on one core), so 100,000 are ~3 minutes "
    "before any solving; the benchmark's largest instance has 880",
)
PROGRAM_VARIABLES = Most(
    2_000_000,
    "program variables",
    "building costs ~55 us and ~1 KB a variable (228,000 took 12.7 s), so 2 million are "
    "~2 minutes and ~2 GB before the backend starts; the benchmark's largest has 14,000",
)
VARIABLES_PER_SOLVER_S = 10_000
"""Variables a backend can take per second of time limit, with margin: the solves measured
reach 1,200-1,500 (14,000 variables optimal in 11.5 s, 49,500 in 32 s on one core, at a
0.1% gap), and a program of 228,000 found no plan in 120 s (< 1,900 a second). A program
above 6.7x the best measured rate has no hope within the time limit."""
VARIABLES_ANY_TIME_LIMIT = 50_000
"""Variables never refused for want of time (short limits on small programs are left to the
backend: below this, start-up costs dominate and the rate above does not apply)."""
