"""The plan's cost attribution: every workload's pools in every region priced by phase
(`models.serving.attribution`), filled in at read-back.

Money is the bill: each (region, GPU type)'s cost in the plan (the GPUs bought, in whole
servers with buy_unit node, x price x hours) is shared among the pools holding that type
there, in proportion to their GPUs (owned GPUs in use dilute the price, as an hourly plan's
committed ones do: solver.analysis.hour_attribution). A server's idle GPUs are thus paid
by the workloads on its type in its region, pro rata to the GPUs each uses, and the rows
add up to the plan's cost, shared groups included.

A shared group's share of the bill (and its GPU-hours) goes to its members in proportion
to the share of the group's capacity each member's load takes: member w's weight is its
peak load over the template's capacity for it, load_w / a[w,t] (both per group replica or
both over all its replicas: the count cancels), normalised over the members (equal
shares where no member has load). Its money splits by phase evenly: a group's replicas
run several workloads' mixes at once, whose phase split this module does not model.

Each chosen pool's time splits at its operating batch (the physics of its real size,
from its tabulated curve): unified pools by the step model's Shapley split, prefill and
decode pools wholly to their phase. Tokens served are the scenario-without-failure
routing into the region, scaled from the peak the fleet is sized for to the average
rate of each origin (`average_to_peak`).
"""

from collections import defaultdict

from models.schema.instance import Instance
from models.schema.serving_inputs import traffic_mix
from models.schema.traffic import Demand
from models.serving.attribution import (
    DECODE_ONLY,
    PREFILL_ONLY,
    PhaseShares,
    PoolCost,
    attribute,
    unified_phase_shares,
)
from models.serving.replica import MixTokens, Role
from models.serving.replica_layout import replica_step_model
from solver.candidates.pools import PoolCurve, physics_of
from solver.plan.records import CostAttribution, GpuUse, ReplicaPool, Route
from solver.program.sets import ProgramSets

SECONDS_PER_DAY = 86_400.0


def average_to_peak(demand: Demand) -> float:
    """Average over peak arrival rate of one region's demand: requests_per_day / 86,400
    over the peak rate; a peak rate with an hourly profile w, mean(w) / max(w) (its mean
    hour, `Demand.local_hourly_rps`); 1 for a peak rate alone (every hour at the peak)."""
    peak = demand.peak_rps
    if peak <= 0:
        return 1.0
    if demand.requests_per_day is None:
        hours = demand.local_hourly_rps()
        return min(sum(hours) / len(hours) / peak, 1.0)
    return min(demand.requests_per_day / SECONDS_PER_DAY / peak, 1.0)


def cost_attribution(
    sets: ProgramSets,
    counts: dict[tuple[str, str, str], int],
    curves: dict[tuple[str, str], PoolCurve],
    routing: tuple[Route, ...],
    gpu_uses: tuple[GpuUse, ...],
    groups: tuple[ReplicaPool, ...] = (),
) -> tuple[CostAttribution, ...]:
    """Per (workload, region) with pools: cost (its share of the bill, the module text's
    rule), phase shares, GPU-hours and $/Mtok. `gpu_uses`: the plan's GPU table, each
    row's GPUs used (shared groups' included) and cost per month; `groups`: the plan's
    shared groups, their members' peak loads filled (solver.readback.groups.with_routing)."""
    instance = sets.instance
    hours = sets.hours_per_month
    bill = {(use.region, use.gpu): use for use in gpu_uses}
    pools: dict[tuple[str, str], list[PoolCost]] = defaultdict(list)
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        if not count:
            continue
        c = pool.candidate
        gpus = count * c.gpus
        batch = curves[(pool.workload, c.key)].physics(count).batch
        pools[(pool.workload, pool.region)].append(
            PoolCost(
                bill_share(bill[(pool.region, c.gpu)], gpus),
                gpus * hours,
                candidate_shares(instance, pool.workload, c, batch),
            )
        )
    for group in groups:
        gpus = group.count * group.replica_gpus
        cost = bill_share(bill[(group.region, group.gpu)], gpus)
        for w, weight in member_weights(group).items():
            pools[(w, group.region)].append(PoolCost(cost * weight, gpus * hours * weight, EVEN))
    return attribution_rows(instance, pools, _average_served(instance, routing), hours)


EVEN = PhaseShares(0.5, 0.5)
"""A group member's phase split (the module text's rule)."""


def member_weights(group: ReplicaPool) -> dict[str, float]:
    """Member -> its share of a shared group's cost: load_w / a[w,t], normalised over the
    members; equal shares where no member has load (the module text's rule)."""
    taken = {
        m.workload: (m.load_requests_per_s or 0.0) / m.requests_per_s_per_replica
        if m.requests_per_s_per_replica > 0
        else 0.0
        for m in group.members
    }
    total = sum(taken.values())
    if total <= 0:
        return {w: 1.0 / len(taken) for w in taken}
    return {w: t / total for w, t in taken.items()}


def bill_share(use: GpuUse, gpus: int) -> float:
    """What `gpus` of the `use.used` GPUs of one (region, type) pay of its bill a month:
    cost_per_month x gpus / used."""
    return use.cost_per_month * gpus / use.used if use.used > 0 else 0.0


def attribution_rows(
    instance: Instance,
    pools: dict[tuple[str, str], list[PoolCost]],
    served: dict[tuple[str, str], float],
    hours: float,
) -> tuple[CostAttribution, ...]:
    """One row per (workload, region) of `pools`, priced by phase over the requests/s
    `served` there (`models.serving.attribution.attribute`)."""
    rows = []
    for (w, r), costs in pools.items():
        workload = instance.workload(w)
        mix = traffic_mix(workload, instance.policy.prefix_affinity)
        rate = served.get((w, r), 0.0)
        split = attribute(
            costs, rate * mix.prompt_mean_tokens, rate * mix.output_mean_tokens, hours
        )
        rows.append(
            CostAttribution(
                workload=w,
                region=r,
                cost_per_month=split.cost_per_month,
                usd_per_million_input_tokens=split.usd_per_million_input_tokens,
                usd_per_million_output_tokens=split.usd_per_million_output_tokens,
                prefill_share=split.prefill_share,
                decode_share=split.decode_share,
                prefill_gpu_hours_per_month=split.prefill_gpu_hours_per_month,
                decode_gpu_hours_per_month=split.decode_gpu_hours_per_month,
                bill=split.bill,
                offline=workload.slo.is_offline or workload.is_batch,
            )
        )
    return tuple(rows)


def pool_phase_shares(
    sets: ProgramSets,
    counts: dict[tuple[str, str, str], int],
    curves: dict[tuple[str, str], PoolCurve],
) -> dict[tuple[str, str, str], PhaseShares]:
    """(workload, candidate key, region) -> the phase split of each pool in use, at the
    operating batch of its real size."""
    found = {}
    for pool in sets.pools:
        key = (pool.workload, pool.candidate.key, pool.region)
        count = counts.get(key, 0)
        if count:
            batch = curves[(pool.workload, pool.candidate.key)].physics(count).batch
            found[key] = candidate_shares(sets.instance, pool.workload, pool.candidate, batch)
    return found


def candidate_shares(instance: Instance, workload: str, candidate, batch: float) -> PhaseShares:
    """The phase split of one replica of `candidate` at mean batch `batch`: wholly its
    phase for a prefill or decode replica, the Shapley split for a unified one."""
    if candidate.role is Role.PREFILL:
        return PREFILL_ONLY
    if candidate.role is Role.DECODE:
        return DECODE_ONLY
    physics = physics_of(instance, workload, candidate.config)
    steps = replica_step_model(candidate.config, physics.efficiency)
    return unified_phase_shares(steps, MixTokens.of(physics.mix), batch)


def _average_served(instance: Instance, routing: tuple[Route, ...]) -> dict[tuple[str, str], float]:
    """(workload, destination) -> average requests/s served there."""
    demand = {(w.name, r): d for w in instance.workloads for r, d in w.demand.items()}
    served: dict[tuple[str, str], float] = defaultdict(float)
    for route in routing:
        origin = demand.get((route.workload, route.origin))
        scale = average_to_peak(origin) if origin is not None else 1.0
        served[(route.workload, route.destination)] += route.requests_per_s * scale
    return served
