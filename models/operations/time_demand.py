"""The hours the program plans, as instances: which instances plan in time, the warm
rate of every (workload, region) in every UTC hour, and one hour's demand as a static
instance that the single-period physics and verifier understand.

Time planning is on when any demand has an `hourly_profile` or any supply entry offers
a reserved or spot price (`uses_time`); an instance without them is planned as today.

Warm rate. The pool an autoscaler runs in hour h must cover
warm_h = min(max over the hour of d(t - L) + H, P) (`models.operations.autoscaling`), L the lag
(`policy.scale_detection_s` + replica start time). Start times differ per GPU type; the
hourly rows take the slowest start among the GPU types on offer (`planning_start_s`),
so whichever configuration the program picks holds its SLO while replicas start. A flat
day (no profile) gives warm_h = P in every hour: today's single peak hour.

Batch workloads (`deadline_hours`) have no hourly row: their volume is scheduled into
idle hours afterwards (`models.operations.batch_soak`), so an hour's instance holds interactive
workloads only.
"""

from collections.abc import Mapping

from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY, Demand


def uses_time(instance: Instance) -> bool:
    """Whether the instance asks for hourly planning: an hourly profile on some demand,
    or reserved or spot pricing on some supply entry (`Instance.asks_for_hours`)."""
    return instance.asks_for_hours()


def planning_start_s(instance: Instance) -> float:
    """The slowest replica start time among the GPU types on offer, seconds."""
    return max(instance.replica_start_s(gpu) for gpu in instance.gpu_specs)


def failover_window_s(instance: Instance) -> float:
    """T_s: seconds after a region loss before replicas started in the survivors serve,
    `policy.failover_start_s`, else the slowest replica start among the GPU types on
    offer (whichever the survivors start, they serve by then)."""
    if instance.policy.failover_start_s is not None:
        return instance.policy.failover_start_s
    return planning_start_s(instance)


def interactive_grid(instance: Instance) -> dict[tuple[str, str], tuple[float, ...]]:
    """Arrival rates of each UTC hour for interactive (workload, region) keys, requests/s."""
    from models.operations.time_periods import demand_grid  # hourly plans only (issue 19)

    batch = {w.name for w in instance.workloads if w.is_batch}
    return {key: rates for key, rates in demand_grid(instance).items() if key[0] not in batch}


def warm_grid(instance: Instance) -> dict[tuple[str, str], tuple[float, ...]]:
    """warm_h per interactive (workload, region) and UTC hour, requests/s (see the module
    text); keys with no demand are left out."""
    from models.operations.autoscaling import pool_headroom  # hourly plans only (issue 19)

    start_s = planning_start_s(instance)
    policy = instance.policy
    warm = {}
    for key, rates in interactive_grid(instance).items():
        if max(rates) <= 0:
            continue
        headroom = pool_headroom(rates, 1.0, start_s, policy.scale_detection_s, policy.burst_factor)
        warm[key] = headroom.warm_rps_by_hour
    return warm


def hour_instance(instance: Instance, rates: Mapping[tuple[str, str], float]) -> Instance:
    """The static instance of one hour: every interactive workload's demand replaced by a
    flat `peak_requests_per_s` of that hour (regions at 0 dropped, workloads with no
    demand left dropped), batch workloads removed, pricing tiers and horizon left as they
    are (the static program reads none of them)."""
    workloads = []
    for workload in instance.workloads:
        if workload.is_batch:
            continue
        demand = {
            region: Demand(peak_requests_per_s=rates[(workload.name, region)])
            for region in workload.demand
            if rates.get((workload.name, region), 0.0) > 0
        }
        if demand:
            workloads.append(workload.model_copy(update={"demand": demand}))
    return instance.model_copy(update={"workloads": workloads})


def held_all_day(instance: Instance) -> Instance:
    """The static instance of a fleet held every hour of the day: every interactive
    (workload, region) at its highest warm rate of the day (`warm_grid`; the regions'
    peaks need not fall in one hour), every offer with a reserved price priced at it
    (a GPU held all day is committed), the others at their on-demand price, and no
    reserved or spot terms left (so it plans as a static instance: `uses_time`).

    Its plans serve every hour: each hour's warm rates are at most these, and the
    hourly program asks no more of a fleet than the static one does at the same rates
    (its failover may start replicas where the static one keeps them warm). So such a
    plan's purchases, committed in every hour, are a plan of the hourly program at no
    more than the static plan's cost (solver.decompose.by_period, `fleet`)."""
    peak = {key: max(rates) for key, rates in warm_grid(instance).items()}
    regions = [
        region.model_copy(
            update={
                "supply": {
                    gpu: offer.model_copy(
                        update={
                            "price_per_gpu_hour": offer.reserved_price_per_gpu_hour
                            or offer.price_per_gpu_hour,
                            "reserved_price_per_gpu_hour": None,
                            "spot_price_per_gpu_hour": None,
                            "spot_interruptions_per_hour": None,
                        }
                    )
                    for gpu, offer in region.supply.items()
                }
            }
        )
        for region in instance.regions
    ]
    return hour_instance(instance, peak).model_copy(update={"regions": regions})


def hours_of_day() -> range:
    """UTC hours 0-23."""
    return range(HOURS_PER_DAY)
