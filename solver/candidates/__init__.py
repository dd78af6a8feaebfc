"""The candidate table: every replica configuration worth considering with its capacity, pool
math, dominance reductions and the size check told before the work.

Imports: models/, solver.plan, solver.program (for the reductions), solver.settings."""
