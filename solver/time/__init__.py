"""The program in time: hourly periods, months, batch soaking, spot and failover start, and what
the hourly plan reports (whole servers and power as a static plan states them, and the shadow
prices of the periods program: prices.py).

Imports: models.schema, models.operations; solver.program, solver.candidates,
solver.readback, solver.plan, solver.verify (the hour verifier), solver.backends,
solver.settings, solver.errors and solver.analysis (infeasibility diagnosis)."""
