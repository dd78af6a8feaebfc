"""Solver values -> the Plan: replicas, groups, sites, and the shadow prices of the LP with the
integer decisions fixed.

Imports: solver.program, solver.candidates, solver.plan, solver.analysis.cost_attribution."""
