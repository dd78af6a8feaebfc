"""Many solves: a folder of instances against their goldens (batch), a grid of changes (sweep).

Imports: models.schema, models.io; solver.solve, solver.settings, solver.errors,
solver.backends, solver.plan and solver.verify (the hour verifier)."""
