"""Long horizons under their time limit: growth-horizon at policy.monthly_growth 0.01 and
policy.horizon_months 12, 24, 60 and 120, at --time-limit 30 and 60, each run the CLI in
a fresh interpreter (tests/bench/long_horizon_run.py), with wall and user CPU, month 0's
cost and gap, the horizon's cost and gap, the months stopped at the limit and the months
cut. Run by `make bench` only (not `make test`); no timed assertions. With
FLEETPLAN_BASE naming a checkout of main (a detached worktree), each cell runs there
first and here second, A B, and prints both.

Stop 28 (fuzz28) found 60 months at 60 s ending in 70 s wall on a loaded machine, month
0 with 0.5 s of solving and a 68% gap for the $26,163 the 12-month horizon proves
optimal. Stage timeline, in-process (tests/bench/long_horizon_run.py's figures, and a
wrapper of solver.solve._solve_table, PeriodsStep's build/optimise/read_back,
with_months and verify_hours), main at 120 months, 30 s, load 3.6: month 0 built in 0.09
s, solved in 0.23 s (its part, (30 - 0.9) / 120 s; $55,714, gap 65%), read back in
0.11 s; 120 months built 7.0 s, solved 14.7 s, read back 3.7 s, to 28.1 s; then
with_months 2.4 s, the horizon's verification 5.3 s (0.044 s a month), the JSON 1.3 s:
exit at 37.1 s. The tail was foretold at 1.5 x 120 x 0.04 s (month 0's own verification)
= 7.2 s, of which the months kept 7.2 - (1 - 0.8) x 30 = 1.2 s: the fifth of the limit
the solve share leaves was spent by the later months' builds and fallbacks past 24 s.

The changes (solver.time.shares, solver.time.months, solver.time.step,
solver.time.cut_month): a month's part is shared over at most SHARED_MONTHS = 12 months;
a month whose turn comes past L - V (V the tail, foretold by month 0's verification in
its thread's CPU) is cut (held and grown); a month that held its fallback hands that
fleet on as planned, grown once from its month, and cut months in a row grow the last
searched month once (both were grown again month by month, ceil of ceil: a pool of 2
replicas gained one a month at 1%, and month 119 cost $594,278 for the $68,620 of its
optimal plan).

Measured with the CLI, FLEETPLAN_BASE = a detached worktree of main at decac8fa
("base") against the branch ("this"), side by side (the pair's order given), wall and
user CPU in seconds, month 0's cost and gap, the horizon's cost and gap, months stopped
at the limit and months cut, on the 2-core development machine at the load shown:

       H   L side   wall   user   m0 cost  m0 gap  horizon cost  h. gap stop  cut
      12  30 base    4.5    5.5 $  26,163   0.00% $     319,798    0.00%    0    0  (load 1.1)
      12  30 this    4.7    5.7 $  26,163   0.00% $     319,798    0.00%    0    0  (load 1.1)
      12  60 base    4.2    5.2 $  26,163   0.00% $     319,798    0.00%    0    0  (load 1.2)
      12  60 this    4.6    5.6 $  26,163   0.00% $     319,798    0.00%    0    0  (load 1.3)
      24  30 base    8.1   10.2 $  26,163   0.00% $     679,805    0.00%    0    0  (load 1.4)
      24  30 this    7.9    9.8 $  26,163   0.00% $     679,805    0.00%    0    0  (load 1.5)
      24  60 base    7.4    9.3 $  26,163   0.00% $     679,805    0.00%    0    0  (load 1.4)
      24  60 this    7.9    9.9 $  26,163   0.00% $     679,805    0.00%    0    0  (load 1.4)
      60  30 this   27.3   26.0 $  26,163   0.00% $   2,127,877    0.00%    0    0  (load 3.0)
      60  30 base   26.1   25.5 $  26,163   0.00% $   2,134,934   22.66%    4    0  (load 3.1)
      60  60 this   26.1   26.2 $  26,163   0.00% $   2,127,877    0.00%    0    0  (load 3.2)
      60  60 base   28.0   27.6 $  26,163   0.00% $   2,127,877    0.00%    0    0  (load 3.5)
     120  30 this   22.1   21.9 $  26,163   0.00% $  14,882,301   78.12%   89   45  (load 3.1)
     120  30 base   31.8   37.6 $  49,786  47.45% $  13,601,146   76.92%   18    0  (load 2.4)
     120  60 this   41.4   52.3 $  26,163   0.00% $   5,481,239    0.00%    0    0  (load 2.1)
     120  60 base   45.8   56.5 $  26,163   0.00% $   6,797,298   52.50%    4    0  (load 1.4)

12 months at 60 s three more pairs, this first, then base first, then this (load
1.3-1.8): wall 4.9/5.6, 5.4/5.5, 5.6/5.2 (this/base 0.88, 0.98, 1.08), user 5.8/5.5,
5.2/5.4, 5.5/5.1: the same within the noise, and the same plans (the goldens too).

At 60 months both sides end within the limit at this load and this side proves every
month (base stopped 4 at 30 s: 22.66%). 120 x 30 s is more than the machine can search:
month 0 is proven here ($26,163 against base's $49,786 at 47%) and the run ends 8 s
inside the limit (base 1.8 s past it; 7.1 s past it at load 3.6 in-process), while the
horizon costs 9% more ($14.9M against $13.6M): 89 months on their fallbacks (the peak
fleet held all day, about twice the month's own plan: $55,714 against $26,747 for
month 5) and 45 cut. The tail V = 1.5 x 120 x 0.065 s of CPU = 11.7 s was about 3 x the
4 s it took, so the months were cut from 18 s: one verification of month 0 foretells
the horizon's poorly (0.5-1.9 x over the runs measured). Left for later: verifying each
month as it is planned (so that the tail no longer needs foretelling), and a fallback
cheaper than the peak fleet held all day. Horizon gaps of 77-78% at 120 x 30 s are
horizon_status's bound: after a month not proven, later months are bounded by month 0's
bound, far below a month 119 at 3.3 x month 0's demand.
"""

import os
from pathlib import Path

import pytest

from tests.bench.long_horizon_run import line, run

ROOT = Path(__file__).resolve().parents[2]
CELLS = [(months, limit_s) for months in (12, 24, 60, 120) for limit_s in (30, 60)]


@pytest.mark.parametrize(("months", "limit_s"), CELLS, ids=lambda v: str(v))
def test_long_horizon_under_its_limit(months, limit_s):
    base = os.environ.get("FLEETPLAN_BASE")
    sides = ([("base", Path(base))] if base else []) + [("this", ROOT)]
    for side, tree in sides:
        row = run(tree, months, limit_s)
        print(line(side, months, limit_s, row))
        if side == "this":
            assert row["exit"] == 0, row  # a plan, verified by the run itself
            assert row["m0_cost"] > 0 and row["horizon_cost"] >= row["m0_cost"]
