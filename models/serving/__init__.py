"""A replica and a pool at the SLO: the capacity of one configuration and what limits it, the
batch and prefill models, latency at a load, queueing, pooling and prefix caching.

Imports: models.physics and models.schema: the traffic records, and in replica.py the
instance's Slo and Workload for `TrafficMix.of` and `LatencyTargets.of` (issue 31 moves
those two constructors to the schema side; until then serving loads the instance schema)."""
