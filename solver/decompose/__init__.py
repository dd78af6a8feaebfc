"""Solving the program in parts: workload by workload, in worker processes, the choice of
backend per part and the join that mends what the parts overfill; whole servers shared
by a master over server counts with the parts' plans as columns (server_master), or first
by the regions' own programs and the plan floored at their fleets (regions); the
failover scenarios by Hall rows added as solutions break them (scenario_cuts); and a plan
built without a solver for when the clock stopped every program before one (cover).

Imports: models.schema, models.operations; solver.program, solver.candidates,
solver.colocation, solver.backends, solver.settings, solver.workers (the worker
processes)."""
