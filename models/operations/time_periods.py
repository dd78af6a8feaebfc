"""The representative day on the UTC clock: hourly demand per (workload, region), the
hours the program can merge into weighted periods, and the steepest ramps.

Demand of local hour h (`models.schema.traffic.Demand.local_hourly_rps`):

    profile w, normalised to mean 1:   d_h = requests_per_day / 86,400 x w_h
                                        (or peak_requests_per_s x w_h / max w)
    no profile:                         d_h = peak rate for every h (today's single
                                        peak hour, so plans without a profile do not move)

`peak_to_average` is the flat-profile peak factor; with a profile the profile's own
max w plays that part and the two may not both be given.

UTC. The planner works on one clock so that regions' days line up (follow-the-sun
failover loses a region at its neighbour's peak). UTC hour u covers local time
[u + off, u + off + 1) of a region at `utc_offset_hours` = off. With off = n + f
(n whole, 0 <= f < 1) that interval takes 1 - f of local hour k = (u + n) mod 24 and f
of hour k + 1, so

    D_u = (1 - f) d_k + f d_(k+1)

exact for a demand constant within each local hour, and the day's volume is unchanged.

Periods. The program needs one row set per distinct hour, not per hour: hours whose
vectors (over every (workload, region) key) are equal merge into one period whose
weight is its hour count. Without profiles all 24 hours are equal and merge into one
period of weight 24: today's program.

Ramps. For rates of change the day is taken as moving linearly between hour centres
(hour h's value d_h held at h + 0.5 h), cyclically (hour 23 runs into hour 0 of the
next day). The slope between neighbours is (d_(h+1) - d_h) / 3,600 requests/s per s.
The largest rise within any window of up to L seconds, max over t and l <= L of
d(t) - d(t - l), is what a reactive autoscaler with lag L must hold as headroom
(`models.operations.autoscaling`); it is exact for this piecewise-linear day because the
difference is piecewise linear in (t, l) with corners only where t - l and t are hour
centres (l a whole number of hours) or l = L with t or t - L at an hour centre. Windows
up to L, not L alone: on the cyclic day d(t) - d(t - L) falls again once L passes the
day's rise (a day's lag sees the rate of the same hour the day before, a rise of 0), so
a slower start would need less headroom.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY, Demand

SECONDS_PER_HOUR = 3600.0
Key = TypeVar("Key")


def utc_hourly_rps(local_rps: Sequence[float], utc_offset_hours: float) -> tuple[float, ...]:
    """Rates of UTC hours 0-23 from rates of local hours 0-23:
    D_u = (1 - f) d_k + f d_(k+1), k = (u + floor(off)) mod 24, f = off - floor(off).

    Raises:
        ValueError: not 24 rates.
    """
    _check_day(local_rps)
    whole = math.floor(utc_offset_hours)
    fraction = utc_offset_hours - whole
    return tuple(
        (1 - fraction) * local_rps[(hour + whole) % HOURS_PER_DAY]
        + fraction * local_rps[(hour + whole + 1) % HOURS_PER_DAY]
        for hour in range(HOURS_PER_DAY)
    )


def demand_utc_rps(demand: Demand, utc_offset_hours: float) -> tuple[float, ...]:
    """Arrival rate of one workload in one region for each UTC hour 0-23, requests/s."""
    return utc_hourly_rps(demand.local_hourly_rps(), utc_offset_hours)


def demand_grid(instance: Instance) -> dict[tuple[str, str], tuple[float, ...]]:
    """UTC-hour arrival rates of every (workload, region) with demand, requests/s."""
    offsets = {region.name: region.utc_offset_hours for region in instance.regions}
    return {
        (workload.name, region): demand_utc_rps(demand, offsets[region])
        for workload in instance.workloads
        for region, demand in workload.demand.items()
    }


@dataclass(frozen=True)
class Period:
    """Hours of the day that share one vector of values: one row set in the program."""

    hours: tuple[int, ...]
    """UTC hours merged into this period (ascending)."""
    values: Mapping
    """Per key, the value every hour of the period shares (e.g. requests/s)."""

    @property
    def weight_hours(self) -> int:
        """Hours per day the period stands for: its cost weight."""
        return len(self.hours)


def aggregate_periods(
    series: Mapping[Key, Sequence[float]], rel_tol: float = 1e-9
) -> tuple[Period, ...]:
    """Merge hours whose values agree for every key into weighted periods.

    Two hours merge when every key's values agree within `rel_tol` (relative, with an
    absolute floor of `rel_tol` for values near 0); each period keeps the values of its
    first hour. Periods are ordered by their first hour. Weights sum to 24.

    Raises:
        ValueError: a series without 24 values.
    """
    for values in series.values():
        _check_day(values)
    keys = list(series)
    periods: list[tuple[list[int], tuple[float, ...]]] = []
    for hour in range(HOURS_PER_DAY):
        vector = tuple(series[key][hour] for key in keys)
        for members, reference in periods:
            if all(
                math.isclose(a, b, rel_tol=rel_tol, abs_tol=rel_tol)
                for a, b in zip(vector, reference, strict=True)
            ):
                members.append(hour)
                break
        else:
            periods.append(([hour], vector))
    return tuple(
        Period(tuple(members), dict(zip(keys, reference, strict=True)))
        for members, reference in periods
    )


def rate_at(series: Sequence[float], t_h: float) -> float:
    """The rate at time `t_h` (hours after UTC midnight, any real, cyclic), moving
    linearly between hour centres where hour h holds its value at h + 0.5."""
    _check_day(series)
    x = (t_h - 0.5) % HOURS_PER_DAY
    below = math.floor(x)
    low = series[below % HOURS_PER_DAY]
    return low + (x - below) * (series[(below + 1) % HOURS_PER_DAY] - low)


@dataclass(frozen=True)
class Ramp:
    """The steepest rise between neighbouring hours of one series."""

    from_hour: int
    to_hour: int
    """(from_hour + 1) mod 24."""
    rps_per_s: float
    """(d_to - d_from) / 3,600: requests/s gained per second (0 for a flat day)."""

    @property
    def rps_per_minute(self) -> float:
        """The same slope per minute: requests/s gained per minute."""
        return self.rps_per_s * 60


def steepest_ramp(series: Sequence[float]) -> Ramp:
    """The largest rise (d_(h+1) - d_h) / 3,600 over the cyclic day; a flat or falling
    day gives a ramp of 0 from hour 0."""
    _check_day(series)
    best = Ramp(0, 1, 0.0)
    for hour in range(HOURS_PER_DAY):
        nxt = (hour + 1) % HOURS_PER_DAY
        slope = (series[nxt] - series[hour]) / SECONDS_PER_HOUR
        if slope > best.rps_per_s:
            best = Ramp(hour, nxt, slope)
    return best


def largest_rise_rps(series: Sequence[float], window_s: float) -> float:
    """max over t and 0 <= l <= window of d(t) - d(t - l), requests/s, for the
    piecewise-linear day (0 for a flat day or a zero window): never less for a longer
    window.

    Evaluated at every t where t or t - window is an hour centre, and between every two
    hour centres at most the window apart: the corners of the difference, so the maximum
    is exact.

    Raises:
        ValueError: a negative window.
    """
    if window_s < 0:
        raise ValueError(f"window_s must be >= 0, got {window_s}")
    window_h = window_s / SECONDS_PER_HOUR
    corners = [hour + 0.5 for hour in range(HOURS_PER_DAY)]
    corners += [centre + window_h for centre in corners]
    rise = max(rate_at(series, t) - rate_at(series, t - window_h) for t in corners)
    hours_apart = range(1, min(math.floor(window_h), HOURS_PER_DAY - 1) + 1)
    between_centres = (
        series[(hour + apart) % HOURS_PER_DAY] - series[hour]
        for hour in range(HOURS_PER_DAY)
        for apart in hours_apart
    )
    return max(0.0, rise, *between_centres)


def lagged_peak_rps(series: Sequence[float], hour: int, lag_s: float = 0.0) -> float:
    """max over t in hour `hour` of d(t - lag): the highest rate a reactive autoscaler
    lagging `lag_s` has seen during that hour (lag 0: the hour's own highest rate)."""
    lag_h = lag_s / SECONDS_PER_HOUR
    start, end = hour - lag_h, hour + 1 - lag_h
    centres = [
        index + 0.5
        for index in range(math.floor(start) - 1, math.ceil(end) + 1)
        if start <= index + 0.5 <= end
    ]
    points = [start, end, *centres]
    return max(rate_at(series, t) for t in points)


def peak_hour(series: Sequence[float]) -> int:
    """The first hour with the highest value."""
    _check_day(series)
    return max(range(HOURS_PER_DAY), key=lambda hour: (series[hour], -hour))


def _check_day(values: Sequence[float]) -> None:
    if len(values) != HOURS_PER_DAY:
        raise ValueError(f"a day has {HOURS_PER_DAY} hourly values, got {len(values)}")
