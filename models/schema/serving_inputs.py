"""A workload of the instance file as the serving model's inputs: its traffic mix and its
latency targets.

The schema turns its records into models.serving's here, at the edge, so that the physics
and the serving model never import the instance schema (issue 31)."""

from dataclasses import replace

from models.schema.instance import Slo, Workload
from models.serving.replica import LatencyTargets, TrafficMix


def traffic_mix(workload: Workload, prefix_affinity: bool = False) -> TrafficMix:
    """The mix of a workload from the instance file; `prefix_affinity` is the
    policy's routing (it matters only with declared prefixes)."""
    mix = TrafficMix.of_lengths(
        workload.prompt_tokens, workload.output_tokens, workload.prefix_cache_hit_rate
    )
    if not workload.prefixes:
        return mix
    return replace(
        mix,
        prefix_tokens=tuple(p.tokens for p in workload.prefixes for _ in range(p.count)),
        prefix_shares=tuple(p.share for p in workload.prefixes for _ in range(p.count)),
        hit_rate_from_prefixes="prefix_cache_hit_rate" not in workload.model_fields_set,
        prefix_affinity=prefix_affinity,
    )


def latency_targets(slo: Slo) -> LatencyTargets:
    """Targets from an instance SLO (ms at the edge, seconds inside)."""
    return LatencyTargets(
        ttft_p99_s=None if slo.ttft_p99_ms is None else slo.ttft_p99_ms / 1e3,
        tpot_p99_s=None if slo.tpot_p99_ms is None else slo.tpot_p99_ms / 1e3,
    )
