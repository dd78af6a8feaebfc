"""What the HTML report draws, computed from the instance and its plan with the physics
(the charts only render these numbers).

For every chosen configuration (workload, GPU, precision, layout, role):

- the roofline: the achieved FLOP rate against arithmetic intensity (FLOPs per HBM byte)
  of its decode step at the operating batch and of a full prefill chunk, under the roofs
  of the replica's step model (achievable FLOP/s and HBM bytes/s at the calibrated
  efficiency), per GPU of the heaviest stage;
- the hockey stick: p99 TTFT and TPOT against the rate per replica (`models.serving.latency.
  latency_at_rate`, the replica in a pool of its real size) from zero to saturation, with
  the plan's operating point (load without failures / replicas) and the SLO lines;
- the frontier: output tokens/s per GPU against tokens/s per user over batch sizes
  (`models.serving.frontier.throughput_frontier`), which points meet the SLO.
"""

from dataclasses import dataclass, field

from models.schema.instance import Instance
from models.schema.serving_inputs import pool_replica
from models.serving.frontier import throughput_frontier
from models.serving.latency import latency_at_rate, saturation_rate
from models.serving.replica import MixTokens, Role
from models.serving.replica_layout import replica_step_model
from solver.candidates.pools import PoolPhysics, physics_of
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan

HOCKEY_POINTS = 40
"""Rates sampled from 1/40 to 98% of saturation, evenly."""


@dataclass(frozen=True)
class RooflinePoint:
    """One kernel mix on the roofline."""

    label: str
    flops_per_byte: float
    achieved_flops_per_s: float


@dataclass(frozen=True)
class ConfigCharts:
    """Everything drawn for one chosen configuration."""

    title: str
    role: str
    peak_flops_per_s: float
    """Achievable decode (GEMV-like) FLOP/s per GPU: the decode roof."""
    hbm_bytes_per_s: float
    prefill_flops_per_s: float = 0.0
    """Achievable prefill (GEMM) FLOP/s per GPU: the prefill roof."""
    roofline: list[RooflinePoint] = field(default_factory=list)
    rates_per_replica: list[float] = field(default_factory=list)
    ttft_p99_ms: list[float] = field(default_factory=list)
    tpot_p99_ms: list[float] = field(default_factory=list)
    operating_rate: float | None = None
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None
    frontier_user_tokens_per_s: list[float] = field(default_factory=list)
    frontier_gpu_tokens_per_s: list[float] = field(default_factory=list)
    frontier_meets_slo: list[bool] = field(default_factory=list)
    note: str = ""


def chart_data(instance: Instance, plan: Plan) -> list[ConfigCharts]:
    """Charts of every distinct chosen configuration, in plan order. A co-located group
    (several workloads on one replica's GPUs) has no single model to draw a roofline,
    latency curve or frontier of: its entry is a note naming the members."""
    seen: dict[tuple[str, str], list[ReplicaPool]] = {}
    for pool in plan.replicas:
        seen.setdefault((pool.workload, pool.key), []).append(pool)
    loads = _loads(plan)
    return [
        _charts(instance, pools, loads) if len(pools[0].workloads) <= 1 else _group_note(pools)
        for pools in seen.values()
    ]


def _group_note(pools: list[ReplicaPool]) -> ConfigCharts:
    first = pools[0]
    return ConfigCharts(
        title=f"{first.workload}: {first.label}",
        role=str(first.role),
        peak_flops_per_s=0.0,
        hbm_bytes_per_s=0.0,
        note=f"co-located: {', '.join(first.workloads)} share each replica's GPUs; the "
        "charts draw one model's pools, and the group's capacity per member is in the plan "
        "tables",
    )


def _loads(plan: Plan) -> dict[tuple[str, str, str], float]:
    if not plan.scenarios:
        return {}
    return {
        (p.workload, p.region, p.phase.split(" ")[0]): p.load_requests_per_s
        for p in plan.scenarios[0].pools
    }


def _charts(
    instance: Instance, pools: list[ReplicaPool], loads: dict[tuple[str, str, str], float]
) -> ConfigCharts:
    first = pools[0]
    config = pool_replica(instance, first)
    physics = physics_of(instance, first.workload, config)
    steps = replica_step_model(config, physics.efficiency)
    mix = MixTokens.of(physics.mix)
    capacity = physics.at(max(p.count for p in pools))
    charts = ConfigCharts(
        title=f"{first.workload}: {first.label}",
        role=str(first.role),
        peak_flops_per_s=steps.decode_linear_flops_per_s,
        hbm_bytes_per_s=steps.hbm_bytes_per_s,
        prefill_flops_per_s=steps.prefill_linear_flops_per_s,
        roofline=_roofline(steps, mix, capacity.batch, first.role),
        ttft_target_ms=physics.targets.ttft_p99_s * 1e3
        if physics.targets.ttft_p99_s is not None
        else None,
        tpot_target_ms=physics.targets.tpot_p99_s * 1e3
        if physics.targets.tpot_p99_s is not None
        else None,
    )
    if first.role is not Role.UNIFIED:
        return _with_frontier(charts, physics, note="latency curve: unified pools only")
    count = max(p.count for p in pools)
    edge = saturation_rate(physics.serving, count)
    rates = [edge * 0.98 * i / HOCKEY_POINTS for i in range(1, HOCKEY_POINTS + 1)]
    curve = [latency_at_rate(physics.serving, r, count) for r in rates]
    served = sum(loads.get((p.workload, p.region, "unified"), 0.0) for p in pools)
    replicas = sum(p.count for p in pools)
    charts = ConfigCharts(
        **{
            **charts.__dict__,
            "rates_per_replica": rates,
            "ttft_p99_ms": [c.ttft_p99_s * 1e3 for c in curve],
            "tpot_p99_ms": [c.tpot_p99_s * 1e3 for c in curve],
            "operating_rate": served / replicas if replicas else None,
        }
    )
    return _with_frontier(charts, physics)


def _with_frontier(charts: ConfigCharts, physics: PoolPhysics, note: str = "") -> ConfigCharts:
    points = throughput_frontier(physics.serving, physics.targets)
    return ConfigCharts(
        **{
            **charts.__dict__,
            "frontier_user_tokens_per_s": [p.tokens_per_s_per_user for p in points],
            "frontier_gpu_tokens_per_s": [p.output_tokens_per_s_per_gpu for p in points],
            "frontier_meets_slo": [p.meets_slo for p in points],
            "note": note,
        }
    )


def _roofline(steps, mix: MixTokens, batch: float, role: Role) -> list[RooflinePoint]:
    """Decode step at the operating batch and a full prefill chunk, per GPU:
    intensity = FLOPs / HBM bytes, achieved = FLOPs / pass seconds."""
    points = []
    if role is not Role.PREFILL and batch > 0:
        kv_tokens = batch * mix.context
        flops = (
            batch * steps.decode_linear_flops_per_token
            + kv_tokens * steps.decode_attention_flops_per_pair
        )
        hbm_bytes = steps.dense_weight_bytes + kv_tokens * steps.kv_bytes_per_token
        seconds = steps.pass_s(batch, kv_tokens)
        points.append(
            RooflinePoint(f"decode, batch {batch:.0f}", flops / hbm_bytes, flops / seconds)
        )
    if role is not Role.DECODE:
        chunk = float(steps.chunk_tokens)
        pairs = chunk * (mix.cached_prompt + mix.new_prompt / 2)
        flops = (
            chunk * steps.prefill_linear_flops_per_token
            + pairs * steps.prefill_attention_flops_per_pair
        )
        seconds = steps.pass_s(0.0, 0.0, chunk, pairs)
        points.append(
            RooflinePoint(
                f"prefill chunk {chunk:.0f}", flops / steps.dense_weight_bytes, flops / seconds
            )
        )
    return points
