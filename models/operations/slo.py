"""SLO arithmetic: indicators, error budgets, burn rates, alerts, and failure headroom.

Conventions: `slo` is the target fraction of good events (0.999 for "three nines");
`error_rate` is the observed fraction of bad events; a window is `window_days` long and
traffic is taken as uniform over it, so a request-based and a time-based budget agree
(a full outage of x minutes spends x minutes' share of the requests).
"""

import math
from dataclasses import dataclass

from models.schema.quantities import counted
from models.schema.traffic import HOURS_PER_DAY

MINUTES_PER_DAY = 24 * 60


def _check_slo(slo: float) -> None:
    if not 0 < slo < 1:
        raise ValueError(f"slo must be a fraction in (0, 1), e.g. 0.999; got {slo}")


def _check_window(window_days: float) -> None:
    if window_days <= 0:
        raise ValueError(f"window_days must be > 0, got {window_days}")


def sli(good_events: float, valid_events: float) -> float:
    """Service level indicator: good_events / valid_events (1.0 when nothing was valid)."""
    if good_events < 0 or valid_events < 0 or good_events > valid_events:
        raise ValueError(f"need 0 <= good <= valid, got good={good_events}, valid={valid_events}")
    return 1.0 if valid_events == 0 else good_events / valid_events


def error_budget_fraction(slo: float) -> float:
    """The error budget as a fraction of events: 1 - SLO (0.1% for 99.9%)."""
    _check_slo(slo)
    return 1 - slo


def error_budget_minutes(slo: float, window_days: float) -> float:
    """The budget as minutes of full outage: (1 - SLO) x window_days x 1,440.

    99.9% over 30 days: 0.001 x 43,200 = 43.2 minutes.
    """
    _check_window(window_days)
    return error_budget_fraction(slo) * window_days * MINUTES_PER_DAY


def error_budget_requests(slo: float, requests_in_window: float) -> float:
    """The budget as failed requests: (1 - SLO) x requests in the window."""
    if requests_in_window < 0:
        raise ValueError(f"requests_in_window must be >= 0, got {requests_in_window}")
    return error_budget_fraction(slo) * requests_in_window


def burn_rate(error_rate: float, slo: float) -> float:
    """How fast the budget burns: error_rate / (1 - SLO).

    1.0 spends exactly the budget over the window; 14.4 spends 30 days' budget in 50 h.
    """
    if not 0 <= error_rate <= 1:
        raise ValueError(f"error_rate must be a fraction in [0, 1], got {error_rate}")
    return error_rate / error_budget_fraction(slo)


def budget_consumed(error_rate: float, duration_h: float, slo: float, window_days: float) -> float:
    """Fraction of the window's budget an incident spends: burn x duration / window.

    Equivalently (error_rate x duration / window) / (1 - SLO): the share of the window's
    requests that failed, over the share allowed to fail. 1.44% errors for 1 h against
    99.9% over 30 days: 14.4 x 1 / 720 = 2%.
    """
    if duration_h < 0:
        raise ValueError(f"duration_h must be >= 0, got {duration_h}")
    _check_window(window_days)
    return burn_rate(error_rate, slo) * duration_h / (window_days * HOURS_PER_DAY)


def time_to_exhaustion_h(
    burn: float, window_days: float, budget_remaining_fraction: float = 1.0
) -> float:
    """Hours until the budget is gone at a constant burn rate:
    remaining x window_hours / burn (math.inf at burn 0).

    A full 30-day budget at 14.4x lasts 720 / 14.4 = 50 h; at 50x, 14.4 h.
    """
    if burn < 0:
        raise ValueError(f"burn rate must be >= 0, got {burn}")
    if not 0 <= budget_remaining_fraction <= 1:
        raise ValueError(
            f"budget_remaining_fraction must be in [0, 1], got {budget_remaining_fraction}"
        )
    _check_window(window_days)
    if burn == 0:
        return math.inf
    return budget_remaining_fraction * window_days * HOURS_PER_DAY / burn


@dataclass(frozen=True)
class BurnScenario:
    """An incident: a steady error rate held for some hours, and what it costs."""

    error_rate: float
    duration_h: float
    burn_rate: float
    budget_consumed: float
    """Fraction of the window's budget spent (1.0 = all of it)."""
    hours_to_exhaustion: float
    """Hours a full budget lasts at this burn rate (math.inf at burn 0)."""


def burn_scenario(
    error_rate: float, duration_h: float, slo: float, window_days: float
) -> BurnScenario:
    """Burn rate, budget spent and time to exhaustion of one incident."""
    burn = burn_rate(error_rate, slo)
    return BurnScenario(
        error_rate=error_rate,
        duration_h=duration_h,
        burn_rate=burn,
        budget_consumed=budget_consumed(error_rate, duration_h, slo, window_days),
        hours_to_exhaustion=time_to_exhaustion_h(burn, window_days),
    )


@dataclass(frozen=True)
class AlertPolicy:
    """A multi-window burn-rate alert: fire when `budget_fraction` of the window's budget
    would be spent within `long_window_h`, confirmed over `short_window_h` so the alert
    resets soon after the incident ends."""

    severity: str
    budget_fraction: float
    long_window_h: float
    short_window_h: float


SRE_WORKBOOK_POLICIES = (
    AlertPolicy("page", 0.02, 1.0, 5 / 60),
    AlertPolicy("page", 0.05, 6.0, 0.5),
    AlertPolicy("ticket", 0.10, 72.0, 6.0),
)
"""The multi-window, multi-burn-rate recipe of Google's SRE Workbook (chapter "Alerting
on SLOs"): page on 2% of a 30-day budget in 1 h (14.4x) or 5% in 6 h (6x), ticket on 10%
in 3 days (1x); each short window is 1/12 of its long one."""


@dataclass(frozen=True)
class BurnRateAlert:
    """A burn-rate alert threshold for one policy, one SLO and one window."""

    policy: AlertPolicy
    burn_rate: float
    """Fire when the burn rate over both windows exceeds this."""
    error_rate: float
    """The same threshold as an error rate: burn_rate x (1 - SLO)."""


def burn_rate_threshold(budget_fraction: float, long_window_h: float, window_days: float) -> float:
    """Burn rate that spends `budget_fraction` of the budget in `long_window_h`:
    budget_fraction x window_hours / long_window_h (2% in 1 h of 720 h: 14.4)."""
    if long_window_h <= 0:
        raise ValueError(f"long_window_h must be > 0, got {long_window_h}")
    _check_window(window_days)
    return budget_fraction * window_days * HOURS_PER_DAY / long_window_h


def multiwindow_burn_alerts(
    slo: float,
    window_days: float,
    policies: tuple[AlertPolicy, ...] = SRE_WORKBOOK_POLICIES,
) -> tuple[BurnRateAlert, ...]:
    """The burn-rate and error-rate thresholds of each alert policy for this SLO."""
    budget = error_budget_fraction(slo)
    alerts = []
    for policy in policies:
        threshold = burn_rate_threshold(policy.budget_fraction, policy.long_window_h, window_days)
        alerts.append(BurnRateAlert(policy, threshold, threshold * budget))
    return tuple(alerts)


def zone_loss_overprovision_factor(zones: int, zones_lost: int = 1) -> float:
    """Capacity multiplier to survive losing `zones_lost` of `zones` equal zones:
    N / (N - k). Each surviving zone must carry 1 / (N - k) of the load, and all N are
    built alike: 1.5x for three zones, 2x for two, 1.33x for four."""
    if zones_lost < 1:
        raise ValueError(f"zones_lost must be >= 1, got {zones_lost}")
    if zones <= zones_lost:
        raise ValueError(
            f"cannot survive losing {zones_lost} of {counted(zones, 'zone')}: need more zones"
        )
    return zones / (zones - zones_lost)


@dataclass(frozen=True)
class ZoneLossLayout:
    """GPUs spread over zones so that losing any one zone keeps `gpus_needed`."""

    gpus_needed: int
    zones: int
    gpus_per_zone: tuple[int, ...]

    @property
    def total_gpus(self) -> int:
        """GPUs in all zones."""
        return sum(self.gpus_per_zone)

    @property
    def gpus_after_worst_loss(self) -> int:
        """GPUs left after losing the largest zone."""
        return self.total_gpus - max(self.gpus_per_zone)


def gpus_to_survive_zone_loss(gpus_needed: float, zones: int) -> ZoneLossLayout:
    """The fewest whole GPUs, spread over `zones`, that still hold `gpus_needed` after
    losing any one zone.

    With need n = ceil(gpus_needed) and an even spread, losing the largest zone leaves
    T - ceil(T / N) = floor(T (N - 1) / N) GPUs, which is >= n exactly when
    T >= n N / (N - 1). So T = ceil(n N / (N - 1)), split as evenly as possible
    (31 GPUs over 3 zones: 47 = 16 + 16 + 15).
    """
    zone_loss_overprovision_factor(zones)  # validates zones >= 2
    if gpus_needed < 0:
        raise ValueError(f"gpus_needed must be >= 0, got {gpus_needed}")
    need = math.ceil(gpus_needed)
    total = -(-need * zones // (zones - 1))
    base, extra = divmod(total, zones)
    per_zone = tuple(base + 1 if index < extra else base for index in range(zones))
    return ZoneLossLayout(gpus_needed=need, zones=zones, gpus_per_zone=per_zone)
