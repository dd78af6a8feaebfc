"""One capacity unit across GPU generations, and routing weights per pool.

The unit. A `CapacityUnit` is stated as a reference token mix with its SLO and a
reference configuration (model, GPU, precision, TP x PP). One unit is one request/s of
the reference mix served within the reference SLO; the reference replica's capacity
`reference_requests_per_s` says how many units it holds. A configuration's capacity in
units is what one replica of it carries of the reference mix at the reference SLO
(`models.serving.capacity.replica_capacity`), so a pool of n replicas holds n x that. Pools of
different generations (an A100 pool beside an H200 pool) thus read on one scale.

Routing. Pools that serve the same workload in one region should take its traffic in
proportion to their capacity, so that each runs at the same fraction of what it can carry:
    weight_p = n_p c_p / sum_q n_q c_q
with c_p the capacity per replica of pool p for the workload's own mix and SLO (for the
reference mix, the same as units). Routing by GPU count instead (weight_p = g_p / sum g_q)
sends the slower generation more than its share; `routing_by_gpu_count` computes the p99
TTFT and TPOT that pool would then show, at the load per replica it would get
(`models.serving.frontier.operating_point`; math.inf when that load exceeds what the replica can
run at all: the queue grows without bound), and by how much they break the targets.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.physics.efficiency import Efficiency
from models.serving.capacity import replica_capacity
from models.serving.frontier import operating_point
from models.serving.replica import LatencyTargets, ReplicaConfig, ServingContext, TrafficMix


@dataclass(frozen=True)
class CapacityUnit:
    """The stated reference: mix, SLO, configuration, and its capacity in requests/s."""

    name: str
    mix: TrafficMix
    targets: LatencyTargets
    reference: str
    """Label of the reference configuration."""
    reference_requests_per_s: float
    """Units one reference replica holds: its requests/s of the mix at the SLO."""


def define_capacity_unit(
    name: str,
    reference: ReplicaConfig,
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency: Efficiency,
) -> CapacityUnit:
    """The unit of `mix` at `targets`, anchored on one replica of `reference`.

    Raises:
        ValueError: the reference replica cannot carry the mix within the targets.
    """
    capacity = replica_capacity(reference, mix, targets, efficiency)
    if capacity.requests_per_s <= 0:
        raise ValueError(f"the reference {reference.label} carries nothing: {capacity.reason}")
    return CapacityUnit(name, mix, targets, reference.label, capacity.requests_per_s)


def capacity_units(config: ReplicaConfig, unit: CapacityUnit, efficiency: Efficiency) -> float:
    """Units one replica of `config` holds: its requests/s of the unit's mix at its SLO."""
    return replica_capacity(config, unit.mix, unit.targets, efficiency).requests_per_s


@dataclass(frozen=True)
class PoolShare:
    """One pool serving a workload in a region: its replicas and capacity per replica."""

    name: str
    config: ReplicaConfig
    replicas: int
    requests_per_s_per_replica: float
    """Capacity per replica at the workload's SLO for its mix."""


def routing_weights(pools: Sequence[PoolShare]) -> dict[str, float]:
    """weight_p = n_p c_p / sum n_q c_q: each pool's share of the region's traffic."""
    total = sum(p.replicas * p.requests_per_s_per_replica for p in pools)
    if total <= 0:
        raise ValueError("the pools carry nothing")
    return {p.name: p.replicas * p.requests_per_s_per_replica / total for p in pools}


@dataclass(frozen=True)
class MisroutedPool:
    """What routing by GPU count does to one pool."""

    name: str
    weight_by_capacity: float
    weight_by_gpus: float
    requests_per_s_per_replica: float
    """The load per replica routing by GPU count gives it."""
    utilisation: float
    """That load over the pool's capacity per replica at the SLO."""
    ttft_p99_s: float
    tpot_p99_s: float
    ttft_excess_s: float
    """p99 TTFT minus the target (<= 0 when met; math.inf when the queue grows without bound)."""
    tpot_excess_s: float

    @property
    def breaks_slo(self) -> bool:
        """Whether either p99 exceeds its target."""
        return self.ttft_excess_s > 0 or self.tpot_excess_s > 0


def routing_by_gpu_count(
    pools: Sequence[PoolShare],
    region_requests_per_s: float,
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency_of: dict[str, Efficiency],
) -> list[MisroutedPool]:
    """Every pool's p99s when the region's traffic is split by GPU count (not capacity).

    Args:
        pools: the pools serving the workload in the region.
        region_requests_per_s: the region's traffic of the workload.
        mix, targets: the workload's token mix and SLO.
        efficiency_of: the efficiency factors of each pool, by pool name.
    """
    by_capacity = routing_weights(pools)
    gpus = sum(p.replicas * p.config.gpus for p in pools)
    result = []
    for pool in pools:
        weight = pool.replicas * pool.config.gpus / gpus
        per_replica = weight * region_requests_per_s / pool.replicas
        point = operating_point(
            ServingContext(pool.config, mix, efficiency_of[pool.name]), per_replica
        )
        ttft = math.inf if point is None else point.ttft_p99_s
        tpot = math.inf if point is None else point.tpot_p99_s
        result.append(
            MisroutedPool(
                name=pool.name,
                weight_by_capacity=by_capacity[pool.name],
                weight_by_gpus=weight,
                requests_per_s_per_replica=per_replica,
                utilisation=per_replica / pool.requests_per_s_per_replica,
                ttft_p99_s=ttft,
                tpot_p99_s=tpot,
                ttft_excess_s=_excess(ttft, targets.ttft_p99_s),
                tpot_excess_s=_excess(tpot, targets.tpot_p99_s),
            )
        )
    return result


def _excess(value: float, target: float | None) -> float:
    return -math.inf if target is None else value - target
