"""The least demand an instance may plan for (`limits.LEAST_PEAK_RPS`), today and in the
last month of a procurement horizon whose demand shrinks: below the solver's feasibility
tolerance a demand is planned no GPU, and the verifier refuses the plan."""

import math

from models.schema import limits
from models.schema.instance import Instance

FieldPath = tuple[str | int, ...]
"""A field of the instance, as `checks.FieldPath`."""


def too_little_demand(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Each workload's peak in each region, times demand_growth, at least
    `limits.LEAST_PEAK_RPS`: below the solver's tolerance the demand is planned no GPU.
    Over a procurement horizon whose demand shrinks its last month's peak too
    (`_shrunk_below_floor`)."""
    growth = instance.demand_growth or instance.policy.demand_growth or 1.0
    problems = []
    for index, workload in enumerate(instance.workloads):
        for region, demand in workload.demand.items():
            peak = demand.peak_rps * growth
            where = ("workloads", index, "demand", region)
            if peak >= limits.LEAST_PEAK_RPS:
                problems.extend(_shrunk_below_floor(instance, workload.name, peak, where))
                continue
            problems.append(
                (
                    where,
                    f"a peak of {peak:.3g} requests/s"
                    + (f" (x demand_growth {growth:g})" if growth != 1.0 else "")
                    + f" is below {limits.LEAST_PEAK_RPS:g} requests/s (LEAST_PEAK_RPS in "
                    "models/schema/limits.py): the solver's tolerance would plan no GPU "
                    "for it; give the real rate, or drop the region",
                )
            )
    return problems


def _shrunk_below_floor(
    instance: Instance, workload: str, peak: float, where: FieldPath
) -> list[tuple[FieldPath, str]]:
    """The last month of a horizon whose demand shrinks (monthly_growth g < 0) at least
    `limits.LEAST_PEAK_RPS`: month m plans peak x (1 + g)^m, and growth-horizon at g = -0.5
    over 24 months (month 23 at 0.5^23 of today) was planned no replica in an hour of
    1.2e-6 requests/s, which the verifier refused (exit 70). Months are planned on an
    hourly plan alone (`checks._horizon_without_hours`)."""
    months = instance.policy.horizon_months
    g = instance.monthly_growth(workload)
    if not months or g >= 0 or not instance.asks_for_hours():
        return []
    last = peak * (1 + g) ** (months - 1)
    if last >= limits.LEAST_PEAK_RPS:
        return []
    first = math.floor(math.log(limits.LEAST_PEAK_RPS / peak) / math.log(1 + g)) + 1
    return [
        (
            where,
            f"month {months - 1}'s peak, {peak:.3g} x (1 - {-g:g})^{months - 1} = {last:.3g} "
            f"requests/s, is below {limits.LEAST_PEAK_RPS:g} requests/s (LEAST_PEAK_RPS in "
            "models/schema/limits.py), from month "
            f"{first} on: the solver's tolerance would plan no GPU for it; shorten "
            f"policy.horizon_months to at most {first}, or let the demand shrink more slowly "
            "(monthly_growth)",
        )
    ]
