"""The hourly plan read back from a solved periods program (solver.time.periods), beside
its 24 hours of pools (solver.time.solve): the batch schedule (batch.py), interactive spot
replicas (spot.py), the replicas started after a region loss and the error budget each
loss spends (failover.py), each pool's warm headroom and scaling thresholds and the idle
hours (report.py), the idle share over the GPUs paid (idle.py) and the shadow prices and
binding constraints of the periods program (prices.py).

Imports: models.schema, models.operations, models.serving; solver.program (the families
and row names read back), solver.candidates, solver.plan, solver.readback (the static
plan's pricing), solver.backends (the compiled rows), solver.verify (the hour verifier's
warm shortfalls, recomputed as the verifier does) and solver.time.periods (the program).
"""
