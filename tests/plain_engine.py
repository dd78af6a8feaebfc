"""The simulator's engine for one replica as the latency tests replay it: no shared
prefixes, no speculation, no attention DP (solver.simulate.disaggregated.replica_engine
adds those for a plan's pools)."""

from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.simulate.engine import ReplicaEngine


def plain_engine(config: ReplicaConfig, mix: TrafficMix, efficiency) -> ReplicaEngine:
    """`config`'s engine: the planner's step model, and the KV cache that the replica holds
    for `mix` with no latency target (its whole memory after the weights)."""
    offline = replica_capacity(config, mix, LatencyTargets(), efficiency)
    return ReplicaEngine(
        replica_step_model(config, efficiency),
        offline.kv_capacity_tokens,
        efficiency.max_batch_sequences,
    )
