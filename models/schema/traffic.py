"""Traffic descriptions: request rates per region and token-length distributions."""

import math
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from models.schema.limits import HISTOGRAM_BUCKETS
from models.schema.quantities import (
    HistogramWeight,
    HourlyWeight,
    PeakToAverage,
    PrefixClasses,
    RequestRate,
    RequestsPerDay,
    Share,
    Tokens,
    at_most,
)

SECONDS_PER_DAY = 86_400
HOURS_PER_DAY = 24
Z_P99 = 2.326347874  # standard normal quantile at 0.99


def normalised_profile(weights: list[float] | tuple[float, ...]) -> tuple[float, ...]:
    """Hourly weights scaled to a mean of 1: w_h x 24 / sum(w).

    Raises:
        ValueError: not 24 values, a value that is negative or not finite, or all zero.
    """
    if len(weights) != HOURS_PER_DAY:
        raise ValueError(f"hourly_profile needs {HOURS_PER_DAY} values, got {len(weights)}")
    for hour, weight in enumerate(weights):
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"hourly_profile[{hour}] must be a finite value >= 0, got {weight!r}")
    total = math.fsum(weights)
    if total <= 0:
        raise ValueError("hourly_profile is all zero: give relative weights with some above 0")
    return tuple(weight * HOURS_PER_DAY / total for weight in weights)


class Demand(BaseModel):
    """A region's request rate: a daily volume with a peak factor, or a peak rate.

    With an `hourly_profile` (24 relative weights, local time of the region, normalised
    to a mean of 1) the profile defines the day's shape: with `requests_per_day` the rate
    of local hour h is requests_per_day / 86,400 x w_h (so the peak factor is max w and
    `peak_to_average` must not be given too); with `peak_requests_per_s` the profile is
    scaled so that its highest hour runs at that rate (w_h / max w x peak). Without a
    profile the shape is unknown and every hour is taken at the peak rate, which is the
    single peak hour the planner sizes today.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_day: RequestsPerDay | None = None
    """Requests in an average day."""
    peak_to_average: PeakToAverage = 1.0
    """Peak-hour rate over the daily average rate (diurnal and bursty traffic)."""
    peak_requests_per_s: RequestRate | None = None
    """The peak rate itself, requests/s; replaces requests_per_day x peak_to_average."""
    hourly_profile: list[HourlyWeight] | None = None
    """24 relative weights, one per local hour 0-23 of the region (normalised to a mean
    of 1); default: none, every hour at the peak rate."""

    @field_validator("hourly_profile")
    @classmethod
    def _profile(cls, weights: list[float] | None) -> list[float] | None:
        if weights is not None:
            normalised_profile(weights)
        return weights

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.requests_per_day is None) == (self.peak_requests_per_s is None):
            raise ValueError(
                "give either requests_per_day (with peak_to_average) or peak_requests_per_s"
            )
        if self.peak_requests_per_s is not None and "peak_to_average" in self.model_fields_set:
            raise ValueError("peak_to_average goes with requests_per_day, not peak_requests_per_s")
        if self.hourly_profile is not None and "peak_to_average" in self.model_fields_set:
            raise ValueError(
                "hourly_profile defines the peak (its highest weight over the mean); "
                "drop peak_to_average"
            )
        return self

    @property
    def profile(self) -> tuple[float, ...] | None:
        """The hourly profile normalised to a mean of 1 (local hours), or None."""
        return None if self.hourly_profile is None else normalised_profile(self.hourly_profile)

    @property
    def peak_rps(self) -> float:
        """Peak arrival rate in requests/s: requests_per_day / 86,400 x peak_to_average,
        or x the profile's highest normalised weight when a profile is given."""
        if self.peak_requests_per_s is not None:
            return self.peak_requests_per_s
        assert self.requests_per_day is not None  # guaranteed by _one_form
        profile = self.profile
        peak_factor = self.peak_to_average if profile is None else max(profile)
        return self.requests_per_day / SECONDS_PER_DAY * peak_factor

    def local_hourly_rps(self) -> tuple[float, ...]:
        """Arrival rate of each local hour 0-23, requests/s.

        Profile w (mean 1): requests_per_day / 86,400 x w_h, or peak x w_h / max w.
        No profile: the peak rate in every hour.
        """
        profile = self.profile
        if profile is None:
            return (self.peak_rps,) * HOURS_PER_DAY
        if self.peak_requests_per_s is not None:
            top = max(profile)
            return tuple(self.peak_requests_per_s * weight / top for weight in profile)
        assert self.requests_per_day is not None
        return tuple(self.requests_per_day / SECONDS_PER_DAY * weight for weight in profile)


class TokenDistribution(BaseModel):
    """Token lengths of prompts or outputs: `{mean, p99}` or a `histogram` of buckets.

    With `{mean, p99}` the distribution is taken as lognormal with that mean and 99th
    percentile (the usual shape of prompt and reply lengths); `p99 == mean` means fixed
    length. A histogram is a list of `[tokens, weight]` buckets; weights need not sum to 1.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mean: Tokens | None = None
    """Mean tokens per request (with `p99`)."""
    p99: Tokens | None = None
    """99th-percentile tokens per request (with `mean`; equal to it: fixed length)."""
    histogram: (
        Annotated[list[tuple[Tokens, HistogramWeight]], at_most(HISTOGRAM_BUCKETS)] | None
    ) = Field(default=None, min_length=1)
    """`[tokens, weight]` buckets instead of `{mean, p99}` (weights need not sum to 1)."""

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if self.histogram is not None:
            if self.mean is not None or self.p99 is not None:
                raise ValueError("give either {mean, p99} or a histogram, not both")
            for index, (tokens, weight) in enumerate(self.histogram):
                if tokens <= 0:
                    raise ValueError(f"histogram[{index}]: tokens must be positive, got {tokens}")
                if weight <= 0:
                    raise ValueError(f"histogram[{index}]: weight must be positive, got {weight}")
            return self
        if self.mean is None or self.p99 is None:
            raise ValueError("give both mean and p99 (or a histogram of [tokens, weight])")
        if self.p99 < self.mean:
            raise ValueError(f"p99 ({self.p99:g}) must be at least the mean ({self.mean:g})")
        return self

    @classmethod
    def fixed(cls, tokens: float) -> "TokenDistribution":
        """Every request has exactly `tokens` tokens."""
        return cls(mean=tokens, p99=tokens)

    def buckets(self) -> list[tuple[float, float]]:
        """(tokens, probability) pairs; a single bucket at the mean for `{mean, p99}`."""
        if self.histogram is None:
            return [(self.mean_tokens, 1.0)]
        total = sum(weight for _, weight in self.histogram)
        return [(tokens, weight / total) for tokens, weight in sorted(self.histogram)]

    @property
    def mean_tokens(self) -> float:
        """Mean length in tokens."""
        if self.histogram is None:
            assert self.mean is not None
            return self.mean
        return sum(tokens * p for tokens, p in self.buckets())

    @property
    def p99_tokens(self) -> float:
        """99th-percentile length in tokens (smallest bucket reaching 99% for a histogram)."""
        if self.histogram is None:
            assert self.p99 is not None
            return self.p99
        cumulative = 0.0
        for tokens, p in self.buckets():
            cumulative += p
            if cumulative >= 0.99 - 1e-12:
                return tokens
        return self.buckets()[-1][0]

    @property
    def cv(self) -> float:
        """Coefficient of variation (standard deviation over mean).

        Histogram: computed exactly. `{mean, p99}`: lognormal with sigma solving
        p99 / mean = exp(z sigma - sigma^2 / 2), z = 2.326, the smaller root
        sigma = z - sqrt(z^2 - 2 ln(p99/mean)); then cv = sqrt(exp(sigma^2) - 1).
        Ratios beyond the lognormal's reach (about 15) are capped at sigma = z.
        """
        if self.histogram is not None:
            mean = self.mean_tokens
            variance = sum(p * (tokens - mean) ** 2 for tokens, p in self.buckets())
            return math.sqrt(variance) / mean
        ratio = self.p99_tokens / self.mean_tokens
        discriminant = Z_P99**2 - 2 * math.log(ratio)
        sigma = Z_P99 - math.sqrt(discriminant) if discriminant > 0 else Z_P99
        return math.sqrt(math.expm1(sigma**2))


class SharedPrefix(BaseModel):
    """One prompt prefix that many requests share token for token (a system prompt, a
    customer's documents): its length and the share of the workload's requests that
    start with it. Its KV is stored once per replica (per tier), not once per sequence;
    a request may carry several (a system prompt, then a document)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: Tokens
    """Length of the prefix, tokens."""
    share: Share
    """Fraction of the workload's requests that carry it (its popularity)."""
    count: PrefixClasses = 1
    """Distinct prefixes of this length and share (e.g. one per customer); default 1."""
