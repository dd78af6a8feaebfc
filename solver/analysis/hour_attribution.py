"""The cost attribution of an hourly plan: what each workload's pools in each region cost
over the day as paid, split by phase, and per million tokens served.

A static plan shares each (region, GPU type)'s monthly bill among the pools holding that
type by GPUs (solver.analysis.cost_attribution). An hourly plan pays by the hour and by
tier, so each hour's bill of one (region, GPU type) is shared out among the pools that
hold its GPUs that hour:

- spot GPUs: their price x GPUs, to the pools on spot (dedicated batch replicas on the
  spot tier, interactive replicas on spot), in proportion to their spot GPUs;
- everything else (every committed GPU at the reserved price, used or not, and the
  on-demand GPUs): to the pools' other GPUs (owned ones included, they dilute the
  price), in proportion to those GPUs;
- an hour in which committed GPUs of the offer hold no pool: that hour's reserved bill
  goes to the offer's pools over the day, in proportion to their GPU-hours (the
  commitment is bought for the hours that use it); a commitment that no pool of the day
  uses, to the pools of its region over the day by GPU-hours (to every pool where the
  region holds none).

Summed over the hours and scaled by days per month, the rows add up to the plan's cost
(the static rule is this one with one hour, each server type's bill over the pools
holding it by GPUs). A shared group's pool-hours go to its members by the static rule
(solver.analysis.cost_attribution: load over the template's capacity, normalised; the
phases even). Each pool-hour's money splits by the phase shares of
its pool in its period (unified pools: the step model's Shapley split at the pool's real
size; prefill and decode pools wholly to their phase), and tokens served are the day's
average: each hour's real arrivals (not the warm rate the period is sized for) of every
origin, routed as the period's plan routes them without failure. A batch workload is
charged its dedicated pools; its work soaked into interactive pools rides on capacity
their workloads already pay for, and its $/Mtok is over all of its tokens.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from models.operations.time_demand import interactive_grid
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from models.serving.attribution import PhaseShares, PoolCost
from solver.analysis.cost_attribution import EVEN, attribution_rows, member_weights
from solver.plan.records import CostAttribution, ReplicaPool, Route
from solver.plan.time_records import Hour
from solver.program.families.pricing import OfferTerms

PoolKey = tuple[str, str, str]
"""(workload, configuration key, region)."""


@dataclass(frozen=True)
class PoolHour:
    """One pool's share of one hour's bill."""

    workload: str
    region: str
    gpu: str
    key: str
    period: int
    gpus: int
    cost: float
    """USD this hour."""
    members: tuple[tuple[str, float], ...] = ()
    """A shared group's members and their shares of it (`member_weights`); () otherwise."""


def pool_hours(
    hours: Iterable[Hour],
    offers: Iterable[OfferTerms],
    committed: Mapping[tuple[str, str], float],
    on_spot: Mapping[tuple[int, PoolKey], int],
) -> list[PoolHour]:
    """Every pool's share of every hour's bill (the module text's rules).

    Args:
        on_spot: (period, pool) -> GPUs of the pool on spot in that period.
    """
    terms = {(o.region, o.gpu): o for o in offers}
    shares: list[PoolHour] = []
    idle: dict[tuple[str, str], float] = defaultdict(float)
    for hour in hours:
        by_offer: dict[tuple[str, str], dict[PoolKey, int]] = defaultdict(dict)
        members = {
            _key(pool): tuple(member_weights(pool).items()) for pool in hour.pools if pool.shared
        }
        for pool in hour.pools:  # one entry per pool key: a batch's two tiers are two pools
            if pool.gpus:
                held = by_offer[(pool.region, pool.gpu)]
                held[_key(pool)] = held.get(_key(pool), 0) + pool.gpus
        paid = {(g.region, g.gpu): g for g in hour.gpus}
        for key, o in terms.items():
            row = paid.get(key)
            reserved, on_demand, spot_cost = o.hour_bill(
                committed.get(key, 0.0), row.on_demand if row else 0.0, row.spot if row else 0.0
            )
            pools = list(by_offer.get(key, {}).items())
            spot = [min(on_spot.get((hour.period, k), 0), gpus) for k, gpus in pools]
            other = [gpus - s for (_, gpus), s in zip(pools, spot, strict=True)]
            if not pools or sum(other) <= 0:
                idle[key] += reserved
                reserved = 0.0
            for ((workload, config, region), gpus), s, rest in zip(pools, spot, other, strict=True):
                cost = _part(spot_cost, s, sum(spot)) + _part(
                    reserved + on_demand, rest, sum(other)
                )
                shares.append(
                    PoolHour(
                        workload,
                        region,
                        key[1],
                        config,
                        hour.period,
                        gpus,
                        cost,
                        members.get((workload, config, region), ()),
                    )
                )
    return _spread_idle(shares, idle)


def _part(money: float, mine: float, total: float) -> float:
    return money * mine / total if total > 0 else 0.0


def _key(pool: ReplicaPool) -> PoolKey:
    return (pool.workload, pool.key, pool.region)


def _spread_idle(shares: list[PoolHour], idle: Mapping[tuple[str, str], float]) -> list[PoolHour]:
    """Each offer's reserved bill of hours it held no pool, over its pool-hours by GPUs;
    an offer that holds no pool all day, over its region's pool-hours by GPUs (every
    pool-hour's where the region holds none)."""
    day_gpus: dict[tuple[str, str], int] = defaultdict(int)
    region_gpus: dict[str, int] = defaultdict(int)
    for share in shares:
        day_gpus[(share.region, share.gpu)] += share.gpus
        region_gpus[share.region] += share.gpus
    all_gpus = sum(region_gpus.values())
    by_offer: dict[tuple[str, str], float] = defaultdict(float)
    by_region: dict[str, float] = defaultdict(float)
    everywhere = 0.0
    for (region, gpu), money in idle.items():
        if day_gpus.get((region, gpu), 0) > 0:
            by_offer[(region, gpu)] += money
        elif region_gpus.get(region, 0) > 0:
            by_region[region] += money
        else:
            everywhere += money
    return [
        replace(
            share,
            cost=share.cost
            + _part(
                by_offer[(share.region, share.gpu)], share.gpus, day_gpus[(share.region, share.gpu)]
            )
            + _part(by_region[share.region], share.gpus, region_gpus[share.region])
            + _part(everywhere, share.gpus, all_gpus),
        )
        for share in shares
    ]


def served_by_day(
    instance: Instance, routing_by_period: Mapping[int, tuple[Route, ...]], period_of: list[int]
) -> dict[tuple[str, str], float]:
    """(workload, destination) -> requests/s served there on average over the day: each
    hour's arrivals of every origin, split as that hour's period routes the origin's users
    without failure."""
    arrivals = interactive_grid(instance)
    served: dict[tuple[str, str], float] = defaultdict(float)
    for hour, period in enumerate(period_of):
        sent: dict[tuple[str, str], float] = defaultdict(float)
        for route in routing_by_period.get(period, ()):
            sent[(route.workload, route.origin)] += route.requests_per_s
        for route in routing_by_period.get(period, ()):
            origin = (route.workload, route.origin)
            rate = arrivals.get(origin, (0.0,) * HOURS_PER_DAY)[hour]
            if sent[origin] > 0:
                served[(route.workload, route.destination)] += (
                    rate * route.requests_per_s / sent[origin] / HOURS_PER_DAY
                )
    return served


def hourly_cost_attribution(
    instance: Instance,
    shares: list[PoolHour],
    phases: Mapping[tuple[int, PoolKey], PhaseShares],
    served: Mapping[tuple[str, str], float],
) -> tuple[CostAttribution, ...]:
    """Per (workload, region) with pools: the month's cost as paid, phase shares,
    GPU-hours and $/Mtok (`phases`: (period, pool) -> a dedicated pool's phase split;
    a shared group's share goes to its members, evenly by phase)."""
    hours = instance.policy.hours_per_month
    days = hours / HOURS_PER_DAY
    pools: dict[tuple[str, str], list[PoolCost]] = defaultdict(list)
    for share in shares:
        for member, weight in share.members:
            pools[(member, share.region)].append(
                PoolCost(share.cost * days * weight, share.gpus * days * weight, EVEN)
            )
        split = phases.get((share.period, (share.workload, share.key, share.region)))
        if split is None:
            continue
        pools[(share.workload, share.region)].append(
            PoolCost(share.cost * days, share.gpus * days, split)
        )
    return attribution_rows(instance, dict(sorted(pools.items())), served, hours)
