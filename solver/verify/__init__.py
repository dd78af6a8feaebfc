"""The independent verifier: recomputes a plan from the instance with the physics alone and
lists every violated requirement.

Imports: models.schema, models.physics, models.serving, models.operations, models.colocation,
and from solver/ only the plan schema (solver.plan) and the row names
(solver.program.row_names). Checked by tests/test_imports.py."""
