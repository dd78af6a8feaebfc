"""Solver values -> the Plan: replicas, groups, sites, and the shadow prices of the LP with the
integer decisions fixed.

Imports: models.serving, models.operations; solver.program, solver.candidates, solver.plan,
solver.settings and solver.analysis (cost_attribution, for each pool's cost lines)."""
