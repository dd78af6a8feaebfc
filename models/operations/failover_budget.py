"""The error budget a region loss spends when spare has to start before it serves.

Budget. `slo.availability` = A allows a share 1 - A of a month's requests to fail:
(1 - A) x month minutes of full outage, with the month `policy.hours_per_month` long
(`models.operations.slo.error_budget_minutes`, the figure `fleetplan estimate` prints).

A region loss at UTC hour h. The survivors must carry their own load plus the load
rerouted to them, R_h requests/s in all. They have W_h requests/s of warm capacity (the
replicas already running there, headroom included). Replicas started at the loss serve
after `policy.failover_start_s` = T_s (default: the replica start time); by then the
survivors hold S_h (warm plus what their supply lets them start). With the region out
for T_out seconds:

    failed requests  F_h = max(R_h - W_h, 0) x min(T_s, T_out)
                         + max(R_h - S_h, 0) x max(T_out - T_s, 0)

(load beyond capacity is shed or breaks its SLO; either way it is spent from the
budget). The budget counts requests, so a loss at the peak costs more than one at 3 a.m.
Expressed as minutes of full outage at the month's average rate a (requests/s):

    budget minutes used = F_h / (60 a)

which is exactly (1 - A) x month minutes when F_h = (1 - A) x a x month seconds. With
T_s = 0 only capacity that cannot be started at all costs budget; with W_h >= R_h
(today's static spare) nothing does.

Risk. A region with `failure_probability_per_year` = p (chance of at least one loss in
a year) fails at the Poisson rate lambda = -ln(1 - p) per year. A loss is equally likely
at any hour, so the expected budget burn per year is lambda x mean_h(budget minutes
used at h). Inverting the budget gives the row a program can add per scenario and hour:
max(R_h - W_h, 0) x T_s <= allowed minutes x 60 a (linear with a shortfall variable).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.operations.slo import error_budget_minutes
from models.schema.quantities import HOURS_PER_MONTH
from models.schema.traffic import HOURS_PER_DAY

SECONDS_PER_MINUTE = 60.0


def budget_minutes_per_month(
    availability: float, hours_per_month: float = HOURS_PER_MONTH
) -> float:
    """(1 - A) x hours_per_month x 60: the month's budget as minutes of full outage."""
    return error_budget_minutes(availability, hours_per_month / HOURS_PER_DAY)


def failed_requests(
    load_rps: float,
    warm_rps: float,
    after_start_rps: float,
    failover_start_s: float,
    outage_s: float,
) -> float:
    """F = max(R - W, 0) min(T_s, T_out) + max(R - S, 0) max(T_out - T_s, 0).

    Raises:
        ValueError: a negative rate or time.
    """
    if min(load_rps, warm_rps, after_start_rps, failover_start_s, outage_s) < 0:
        raise ValueError(
            "rates and times must be >= 0, got "
            f"{load_rps}, {warm_rps}, {after_start_rps}, {failover_start_s}, {outage_s}"
        )
    before = max(load_rps - warm_rps, 0.0) * min(failover_start_s, outage_s)
    after = max(load_rps - max(after_start_rps, warm_rps), 0.0) * max(
        outage_s - failover_start_s, 0.0
    )
    return before + after


def budget_minutes_used(failed: float, average_rps: float) -> float:
    """F / (60 a): failed requests as minutes of full outage at the average rate a."""
    if average_rps <= 0:
        raise ValueError(f"average_rps must be > 0, got {average_rps}")
    return failed / (SECONDS_PER_MINUTE * average_rps)


@dataclass(frozen=True)
class ScenarioBudget:
    """What one loss at one hour spends from one workload's monthly budget."""

    scenario: str
    """E.g. `lose=eu-west`."""
    hour: int
    """UTC hour of the loss."""
    shortfall_rps: float
    """max(R - W, 0): load beyond the warm capacity until started replicas serve."""
    failed_requests: float
    budget_minutes: float
    """The month's budget, minutes of full outage."""
    budget_minutes_used: float

    @property
    def budget_fraction_used(self) -> float:
        """Used over the month's budget (1.0 spends all of it)."""
        return self.budget_minutes_used / self.budget_minutes


def scenario_budget(
    scenario: str,
    hour: int,
    load_rps: float,
    warm_rps: float,
    after_start_rps: float,
    failover_start_s: float,
    outage_s: float,
    average_rps: float,
    availability: float,
    hours_per_month: float = HOURS_PER_MONTH,
) -> ScenarioBudget:
    """The budget one loss spends (see the module text for each quantity)."""
    failed = failed_requests(load_rps, warm_rps, after_start_rps, failover_start_s, outage_s)
    return ScenarioBudget(
        scenario=scenario,
        hour=hour,
        shortfall_rps=max(load_rps - warm_rps, 0.0),
        failed_requests=failed,
        budget_minutes=budget_minutes_per_month(availability, hours_per_month),
        budget_minutes_used=budget_minutes_used(failed, average_rps),
    )


def failures_per_year(failure_probability_per_year: float) -> float:
    """lambda = -ln(1 - p): the Poisson rate whose chance of at least one event a year
    is p."""
    if not 0 <= failure_probability_per_year < 1:
        raise ValueError(
            f"failure_probability_per_year must be in [0, 1), got {failure_probability_per_year}"
        )
    return -math.log1p(-failure_probability_per_year)


def expected_burn_minutes_per_year(
    failure_probability_per_year: float, budget_minutes_by_hour: Sequence[float]
) -> float:
    """lambda x mean over the hours of the budget minutes a loss at that hour spends."""
    if not budget_minutes_by_hour:
        raise ValueError("budget_minutes_by_hour is empty")
    mean = math.fsum(budget_minutes_by_hour) / len(budget_minutes_by_hour)
    return failures_per_year(failure_probability_per_year) * mean


def max_shortfall_rps(
    allowed_budget_minutes: float, average_rps: float, failover_start_s: float
) -> float:
    """The largest R - W a loss may leave while spending at most the allowed minutes:
    allowed x 60 a / T_s (infinite when T_s = 0: started capacity serves at once)."""
    if allowed_budget_minutes < 0 or average_rps <= 0 or failover_start_s < 0:
        raise ValueError(
            "need allowed minutes >= 0, average_rps > 0, failover_start_s >= 0, got "
            f"{allowed_budget_minutes}, {average_rps}, {failover_start_s}"
        )
    if failover_start_s == 0:
        return math.inf
    return allowed_budget_minutes * SECONDS_PER_MINUTE * average_rps / failover_start_s


HOURS_PER_YEAR = 8760.0


def losses_per_month(
    failure_probability_per_year: float, hours_per_month: float = HOURS_PER_MONTH
) -> float:
    """m = lambda x hours_per_month / 8,760: the expected losses of a region in a month,
    lambda = -ln(1 - p) per year (`failures_per_year`)."""
    return failures_per_year(failure_probability_per_year) * hours_per_month / HOURS_PER_YEAR


def budgeted_losses(failure_probability_per_year: float | None, hours_per_month: float) -> float:
    """m: the losses a month's budget must absorb, max(1, `losses_per_month`); 1 without a
    probability. A monthly SLO is judged month by month, so a rare loss is still assumed
    to fall in the month being judged (it may not be averaged away over the years); a
    region lost more often than monthly spends its start window that many times."""
    if failure_probability_per_year is None:
        return 1.0
    return max(1.0, losses_per_month(failure_probability_per_year, hours_per_month))
