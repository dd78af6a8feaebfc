"""A replica and a pool at the SLO: the capacity of one configuration and what limits it, the
batch and prefill models, latency at a load (a disaggregated pair's at a concurrency too),
queueing, pooling and prefix caching.

Imports: models.physics, and of the schema only its token distributions
(models.schema.traffic), never the instance schema: the schema turns a workload into this
package's TrafficMix and LatencyTargets on its own side (serving_inputs.py there)."""
