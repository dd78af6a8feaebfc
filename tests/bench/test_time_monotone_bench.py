"""Monotone answers over time (round 28's search, `make bench`): on generated hourly days
and procurement horizons (tests/synthetic_time.py: `hourly_data`, `months_data`, one
workload on two GPU types, in 1 region with no failure policy and 2 and 3 regions that
survive a region's loss; odd seeds at the policy's defaults, whole servers and one
configuration a pool), a looser question never has a costlier plan beyond the gap:

- every TTFT and TPOT target 1.5x looser;
- four times the supply of every offer;
- the failure policy dropped (`survive: none`).

A horizon is compared at month 0, its own hourly plan: the months after it are solved
rolling, and a horizon of less demand can cost more in total (tests/bench/
test_months_lock_in_bench.py), by design. Every plan passes the verifier.
tests/solver/test_monotone_properties.py holds the static properties in the default
suite; these solves take 0.1-12 s each. Round 28 ran seeds 0-5 (hourly) and 0-3
(months) by hand and met no violation."""

import copy

import pytest

from models.io.loading import validate_instance
from solver.errors import Infeasible
from solver.solve import solve
from solver.verify.hours import verify_any
from tests.synthetic_time import hourly_data, months_data

SEEDS = (0, 1, 2)
SHAPES = ((2, "region"), (1, "none"), (3, "region"))
TIE_BREAK_USD = 1.0
"""Most the objective's tie-break moves a plan's cost, $/month."""


def _cost(data: dict) -> tuple[float, float] | None:
    """Month 0's (or the day's) cost and gap of the verified plan; None if infeasible."""
    instance = validate_instance(copy.deepcopy(data), data["name"])
    try:
        plan = solve(instance)
    except Infeasible:
        return None
    check = verify_any(instance, plan)
    assert check.ok, check.violations[:3]
    return plan.cost_per_month, plan.solver.mip_gap or 0.0


def _looser(data: dict) -> dict:
    looser = copy.deepcopy(data)
    for item in looser["workloads"]:
        for key in ("ttft_p99_ms", "tpot_p99_ms"):
            if item.get("slo", {}).get(key):
                item["slo"][key] *= 1.5
    return looser


def _more_supply(data: dict) -> dict:
    more = copy.deepcopy(data)
    for region in more["regions"]:
        for offer in region["supply"].values():
            offer["max_gpus"] *= 4
    return more


def _no_policy(data: dict) -> dict:
    return copy.deepcopy(data) | {"policy": {**data["policy"], "survive": "none"}}


def _data(kind: str, seed: int, regions: int, survive: str) -> dict:
    defaults = seed % 2 == 1
    if kind == "hourly":
        return hourly_data(regions, 1, 2, survive, seed, defaults=defaults)
    return months_data(regions, 1, 2, survive, seed, horizon_months=3, defaults=defaults)


@pytest.mark.parametrize("kind", ["hourly", "months"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("regions", "survive"), SHAPES)
def test_a_looser_question_over_time_never_costs_more(kind, seed, regions, survive):
    data = _data(kind, seed, regions, survive)
    base = _cost(data)
    if base is None:
        pytest.skip("the generated question has no plan")
    variants = [_looser, _more_supply] + ([_no_policy] if survive != "none" else [])
    for variant in variants:
        found = _cost(variant(data))
        assert found is not None, f"{variant.__name__}: a looser question lost every plan"
        gap = max(base[1], found[1], 1e-3)
        assert found[0] <= base[0] * (1 + gap) + TIE_BREAK_USD, variant.__name__
