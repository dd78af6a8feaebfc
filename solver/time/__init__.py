"""The program in time: hourly periods, months, batch soaking, spot and failover start, and what
the hourly plan reports.

Imports: models.schema, models.operations; solver.program, solver.candidates,
solver.readback, solver.plan, solver.verify (the hour verifier), solver.backends,
solver.settings, solver.errors and solver.analysis (infeasibility diagnosis)."""
