"""The `cpsat` backend: CP-SAT through OR-Tools MathOpt, a cross-check of `highs`.

What it is for. CP-SAT is a constraint solver with a different engine from the
LP-based branch and cut of HiGHS, CBC and SCIP; solving the same program with it and
getting the same cost is an independent check of a plan. It is not the default and
not the fast path: on large failover programs it is several times slower than `highs`.

What it can do.
- Integer programs: CP-SAT solves them as they stand.
- Programs with continuous variables too (routing, loads, pooled capacity), exactly:
  CP-SAT has none, and handed one it silently treats it as an integer (min 3x + 2y,
  x + y >= 4.5, x >= 1 comes back as 11, not 10). This backend instead puts the
  continuous variables on a grid and returns only points an exact LP confirms:
    1-2. presolve.py: derived bounds; continuous variables that can be integral.
    3-4. grid.py: the grid, its loosened relaxation (a valid lower bound) and its
         restriction (feasible points).
    5.   exact.py and cuts.py: GLOP's polish (the integers fixed, the LP exact) and
         cuts over the integers that repair what the loosening let through.
    6.   search.py and status.py: the loop, and OPTIMAL only when the gap between the
         best polished solution and the best valid bound closes.
- Programs without integer variables go to GLOP (nothing for CP-SAT to decide).

What it cannot do, and says so.
- Duals: none (`capabilities.duals` False); shadow prices come from `highs`.
- Continuous variables are not exact inside CP-SAT (`capabilities.exact_continuous`
  False): a result is exact because every returned point is GLOP's, but a grid too
  coarse for the program's numbers ends FEASIBLE with the gap it reached, not OPTIMAL.
- Refused before any search (ERROR, naming the variable): a grid wider than CP-SAT's
  integers (beyond 5e16 steps; `mip_max_bound` stops at 1e17).
- Refused instead of guessed (ERROR): CP-SAT needs a finite domain for every
  variable, so one without a bound it can derive gets an artificial box; an answer
  that would depend on that box (no point inside it, or the best point on its edge
  while the LP relaxation is bounded) is refused, and the message says to bound the
  variable or use `highs`. The unbounded case is still settled: a point on the box
  with an unbounded LP relaxation is UNBOUNDED.
- Out of time before any true solution: TIME_LIMIT, recommending `highs`.

Options: the time limit is shared by every step (the LPs are quick next to the
search); the gap is CP-SAT's `relative_gap_limit` and reported as in status.py;
threads are CP-SAT's `num_workers` (1 by default: one worker, no portfolio).
"""

from solver.backends.cpsat.backend import CpSatBackend

__all__ = ["CpSatBackend"]
