"""Generated instances over time: `tests.synthetic.generated_data` turned into an hourly
day (a 24-hour profile per region and workload in local time, reserved and spot prices,
a deadline batch) and into a procurement horizon (months of growth with a lead time),
and the features the schema has beside them (power caps, co-location, disaggregation,
KV tiers). For the scale sweep (tests/bench/test_scale_sweep.py) and the regression
tests it finds.

Each builder returns an instance file's contents (a new dict; `generated_data`'s output
for the same arguments is the starting point, so a peak-hour instance and its hourly
twin have the same regions, supply, links, models and peak rates). Deterministic in
`seed`.
"""

import copy
import random
from typing import Any

from models.schema.traffic import HOURS_PER_DAY, SECONDS_PER_DAY
from tests.synthetic import at_policy_defaults, generated_data

DAY_SHAPE = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]
"""The diurnal day of the shipped instances (diurnal-chat-batch, procurement-3region):
weight 1 overnight, 4 through the working day, local hours 0-23."""
UTC_OFFSETS = [-5.0, 1.0, 5.5, 9.0, -8.0, 0.0, 8.0, -3.0, 3.0, 10.0]
"""Local time minus UTC of the generated regions, in order (repeating past ten): the
regions' days peak at different UTC hours, so pooling across them pays."""
RESERVED_SHARE = 0.6
"""Reserved price over on-demand price (diurnal-chat-batch's 60%)."""
SPOT_SHARE = 0.4
"""Spot price over on-demand price, on the first GPU type of every other region."""


def day_profile(rng: random.Random) -> list[float]:
    """`DAY_SHAPE` with its trough lifted or lowered and its peak moved by up to two
    hours: w_h = trough + (shape_{h - shift} - 1) / 3 x (1 - trough), trough in [0.15,
    0.6], so the weights run from `trough` (night) to 1 (the working day)."""
    trough = round(rng.uniform(0.15, 0.6), 2)
    shift = rng.randint(-2, 2)
    return [
        round(trough + (DAY_SHAPE[(h - shift) % HOURS_PER_DAY] - 1) / 3 * (1 - trough), 3)
        for h in range(HOURS_PER_DAY)
    ]


def requests_per_day(peak_rps: float, profile: list[float]) -> float:
    """The daily volume whose profiled peak hour runs at `peak_rps`: the profile's mean-1
    peak weight is max w x 24 / sum w, and the peak rate is requests_per_day / 86,400 x
    that weight (models.schema.traffic.Demand.peak_rps), so requests_per_day = peak x
    86,400 x sum w / (24 max w)."""
    return round(peak_rps * SECONDS_PER_DAY * sum(profile) / (HOURS_PER_DAY * max(profile)), 1)


def hourly_data(
    regions: int,
    workloads: int,
    gpu_types: int,
    survive: str = "region",
    seed: int = 0,
    *,
    spot: bool = True,
    deadline_batch: bool = True,
    defaults: bool = False,
) -> dict[str, Any]:
    """`generated_data(regions, workloads, gpu_types, survive, seed)` over a day: each
    region at its `UTC_OFFSETS` offset, every demand a daily volume with its own
    `day_profile` (same peak rate as the peak-hour instance), every supply entry with a
    reserved price at `RESERVED_SHARE` of on demand, a spot price on the first GPU type
    of every other region (`spot`), and a nightly batch of the first workload's model
    in the first region that may wait 12 hours (`deadline_batch`). `defaults`: the
    policy's defaults (whole servers, one configuration per pool) as
    `at_policy_defaults`."""
    data = generated_data(regions, workloads, gpu_types, survive, seed)
    if defaults:
        data = at_policy_defaults(data)
    rng = random.Random(f"hourly-{seed}")
    for index, region in enumerate(data["regions"]):
        region["utc_offset_hours"] = UTC_OFFSETS[index % len(UTC_OFFSETS)]
        for position, offer in enumerate(region["supply"].values()):
            price = offer["price_per_gpu_hour"]
            offer["reserved_price_per_gpu_hour"] = round(price * RESERVED_SHARE, 2)
            if spot and position == 0 and index % 2 == 0:
                offer["spot_price_per_gpu_hour"] = round(price * SPOT_SHARE, 2)
                offer["spot_interruptions_per_hour"] = 0.1
    for item in data["workloads"]:
        item["demand"] = {
            region: _profiled(rates["peak_requests_per_s"], day_profile(rng))
            for region, rates in item["demand"].items()
        }
    if deadline_batch:
        first = data["workloads"][0]
        region, demand = next(iter(first["demand"].items()))
        data["workloads"].append(
            {
                "name": "nightly",
                "model": first["model"],
                "deadline_hours": 12,
                "demand": {region: {"requests_per_day": round(demand["requests_per_day"] / 4)}},
                "prompt_tokens": {"mean": 3000, "p99": 8000},
                "output_tokens": {"mean": 300, "p99": 800},
            }
        )
    data["name"] = data["name"].replace("gen-", "hourly-", 1) + ("-defaults" if defaults else "")
    return data


def _profiled(peak_rps: float, profile: list[float]) -> dict[str, Any]:
    """A demand entry with `profile` whose peak hour runs at `peak_rps`."""
    return {"requests_per_day": requests_per_day(peak_rps, profile), "hourly_profile": profile}


def months_data(
    regions: int,
    workloads: int,
    gpu_types: int,
    survive: str = "none",
    seed: int = 0,
    *,
    horizon_months: int = 6,
    monthly_growth: float = 0.05,
    lead_time_months: int = 2,
    defaults: bool = False,
) -> dict[str, Any]:
    """`hourly_data(...)` (no spot, no batch) planned over `horizon_months` months, every
    demand growing `monthly_growth` a month, committed capacity `lead_time_months` from
    order to service (procurement-3region's keys)."""
    data = hourly_data(
        regions,
        workloads,
        gpu_types,
        survive,
        seed,
        spot=False,
        deadline_batch=False,
        defaults=defaults,
    )
    data["policy"] |= {
        "horizon_months": horizon_months,
        "monthly_growth": monthly_growth,
        "lead_time_months": lead_time_months,
    }
    data["name"] = data["name"].replace("hourly-", f"months{horizon_months}-", 1)
    return data


def with_features(
    data: dict[str, Any],
    *,
    power_kw: float | None = None,
    colocation: bool = False,
    disaggregation: bool = False,
    kv_tiers: bool = False,
) -> dict[str, Any]:
    """A copy of `data` with schema features on: every region's facility capped at
    `power_kw` kW (procurement-3region's `power_kw`), `policy.colocation` (workloads may
    share replica groups), `policy.disaggregation` (prefill and decode pools), and KV
    tiers (`kv_tiers`: host DRAM and NVMe on every GPU entry, as kv-tiers-doc-qa gives
    its H100, and on every workload a shared system prompt of 20% of its mean prompt, and
    20 customers' documents of 60% of it, each on 2.5% of the requests)."""
    data = copy.deepcopy(data)
    tags = []
    if power_kw is not None:
        for region in data["regions"]:
            region["power_kw"] = power_kw
        tags.append(f"power{power_kw:g}")
    if colocation:
        data["policy"]["colocation"] = True
        tags.append("coloc")
    if disaggregation:
        data["policy"]["disaggregation"] = True
        tags.append("disagg")
    if kv_tiers:
        for entry in data["gpus"]:
            entry |= {
                "host_memory_gib_per_gpu": 256,
                "nvme_tb_per_node": 30.72,
                "nvme_gb_s_per_node": 25,
                "nvme_dwpd": 1,
            }
        for item in data["workloads"]:
            prompt = item["prompt_tokens"]["mean"]
            item["prefixes"] = [
                {"tokens": round(prompt * 0.2), "share": 1.0},
                {"tokens": round(prompt * 0.6), "share": 0.025, "count": 20},
            ]
        tags.append("kvtiers")
    data["name"] = "-".join([data["name"], *tags])
    return data
