"""Shared replica groups: the bounded template set, column generation over packings, one-engine
and swapped templates, warm/cold splits and the tiering report.

Imports: solver.candidates, solver.plan, solver.settings."""
