"""The candidate table: every replica configuration worth considering with its capacity, pool
math, dominance reductions and the size check told before the work.

Imports: models.schema, models.physics, models.serving, models.operations; solver.plan,
solver.settings, solver.errors, solver.program (the dominance reductions solve small
programs) and solver.decompose (the worker pool that fills the table)."""
