"""The time of the regions' stage (solver.decompose.regions.plan.by_region) where the floored
program follows the regions' own programs (rows link regions): the share of the stage the
regions' programs take (`bound_share`), and whether that share is worth starting them
in at all (`worth_starting`).

Why: the floored program needs every region's plan. A region whose program the clock
stopped without one leaves the floored program to design its fleet, which it seldom
does in the time left, and the plan is then the cover built without a solver; a region
stopped with a plan far from its optimum (a tenth of a second in) floors the whole at a
fleet dearer than the cover. So the regions' programs take most of the stage, and where
even that gives each too little, none is started and the solve goes on at once to the
workload parts and their covers (solver.decompose.by_workload.optimise).
"""

import math

BOUND_SHARE = 0.5
"""Share of the time up to the deadline the regions' own programs (the bound) may take
with `FLOORED_ROUNDS` off (the bench's `before`)."""
FLOORED_ROUNDS = 2
"""Rounds of region programs the floored program is counted as, where it follows them: the
regions' own programs take `rounds / (rounds + FLOORED_ROUNDS)` of the time up to the
deadline (`bound_share`), rounds = regions / processes rounded up. On 10 x 20 x 6 region
loss at the defaults a region's program takes 0.5-1.3 s to its proof (HiGHS, one thread;
0.3 s to a plan within a few percent, most of it at the root) and the floored program,
from the regions' plans, 0.8-1.3 s: about two of them. A region its program's share left
without a plan leaves the floored program to design it, which took longer than a 15 s
limit left it (tests/bench/test_limit_curve_bench.py); where every region has a plan
the floored program ends in its two rounds and the search takes the rest. 0: the fixed
`BOUND_SHARE`."""
REGION_MIN_S = 0.25
"""Seconds each region's own program must get for the regions' programs to be started
(`worth_starting`). Measured on 10 x 20 x 6 region loss at the defaults (2 cores, load
3-4; 2.5 x faster than the machine of earlier stops): 0.15 s each left two regions
without a plan and the others' plans summed to $7.3M against their $685k optimum, 0.3 s
each gave $697k; on 20 x 20 x 6 a 10 s limit gave each 0.03 s, no region found a plan,
and the attempt added 1.8 s before the workload parts' covers. 0: always started."""


def bound_share(regions: int, processes: int) -> float:
    """The share of the time to the deadline the regions' own programs take where the
    floored program follows them (`FLOORED_ROUNDS`): 10 regions on one process 10 / 12,
    on two 5 / 7."""
    if not FLOORED_ROUNDS:
        return BOUND_SHARE
    rounds = _rounds(regions, processes)
    return rounds / (rounds + FLOORED_ROUNDS)


def worth_starting(regions: int, processes: int, share_s: float) -> bool:
    """Whether `share_s` seconds on `processes` processes give each of the `regions`
    programs `REGION_MIN_S` (ceil(regions / processes) rounds of them), inf always."""
    return share_s >= _rounds(regions, processes) * REGION_MIN_S


def _rounds(regions: int, processes: int) -> int:
    """Rounds of the regions' programs on `processes` processes, one program each a round."""
    return math.ceil(regions / max(processes, 1))
