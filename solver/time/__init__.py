"""The program in time: hourly periods, months, batch soaking, spot and failover start, and what
the hourly plan reports.

Imports: solver.program, solver.candidates, solver.readback, solver.plan, solver.verify."""
