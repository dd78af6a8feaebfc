"""Interactive spot replicas in the hourly plan, read back from the program
(solver.program.families.spot_pools): per period, each pool's replicas on spot, the share of
time one is down and the replicas down at once with the plan's confidence."""

from models.operations.pricing_tiers import poisson_quantile
from solver.plan.time_records import SpotReplicas
from solver.program.families.spot_pools import SpotColumn
from solver.time.periods import TimeProgram


def spot_replicas(
    program: TimeProgram, values: dict[str, float]
) -> dict[int, tuple[SpotReplicas, ...]]:
    """Period (first UTC hour) -> the pools' spot replicas in it."""
    confidence = program.instance.policy.spot_confidence
    found: dict[int, tuple[SpotReplicas, ...]] = {}
    if confidence is None:
        return found
    for period, pools in program.spot.items():
        rows = []
        for (w, key, r), terms in sorted(pools.items()):
            count = round(values.get(SpotColumn(w, key, r).at(period).name(), 0.0))
            if count < 1:
                continue
            rows.append(
                SpotReplicas(
                    workload=w,
                    region=r,
                    configuration=key,
                    replicas=count,
                    down_fraction=terms.down_fraction,
                    down_replicas=poisson_quantile(count * terms.down_fraction, confidence),
                )
            )
        found[period] = tuple(rows)
    return found
