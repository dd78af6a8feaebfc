"""Shared replica groups: the bounded template set, column generation over packings, one-engine
and swapped templates, warm/cold splits and the tiering report.

Imports: models.colocation, models.physics, models.schema, models.serving; solver.candidates,
solver.plan, solver.settings, solver.errors, solver.program and solver.backends (the pricing
program of the group search) and solver.decompose (the linked-workload sets)."""
