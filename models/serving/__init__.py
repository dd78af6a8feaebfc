"""A replica and a pool at the SLO: the capacity of one configuration and what limits it, the
batch and prefill models, latency at a load, queueing, pooling and prefix caching.

Imports: models.physics and the schema's value vocabulary; never the instance schema."""
