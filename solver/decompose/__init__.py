"""Solving the program in parts: workload by workload, in worker processes, the choice of
backend per part and the join that mends what the parts overfill; whole servers shared
by a master over server counts with the parts' plans as columns (server_master); and the
failover scenarios by Hall rows added as solutions break them (scenario_cuts).

Imports: models.schema, models.operations; solver.program, solver.candidates,
solver.colocation, solver.backends, solver.settings, solver.workers (the worker
processes)."""
