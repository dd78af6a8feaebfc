"""Power per month (issue 32): each month of a procurement horizon states its own power
per region (`months[].power_kw`, the record of the plan's `power_kw`), priced by the
month's own pricing LP.

Hand case: tests/solver/time/test_hour_prices.py's flat day (one region offering H100
and H200, both 700 W, in 8-GPU servers, KV-bound so n replicas carry n q(1); 32 GPUs of
power, the load half-way between 32 H100 and 32 H200 of capacity: 16 q_X + 16 q_Y, two
servers of each), over a horizon of two months growing by g with

    1 + g = (8 q_X + 24 q_Y) / (16 q_X + 16 q_Y)

so that month 1's load is exactly one server of H100 and three of H200 (less 1e-9, so
that rounding never asks for a fifth server). In both months the cap binds with the
capacity exactly met, the LP mixes the two types, and one more kW buys 1/k GPUs more
moved from H200 to H100 at constant capacity, all 24 hours:

    d cost / d kW = (c_X q_Y - c_Y q_X) / (q_Y - q_X) / k

in every month: the static price rule, the same in month 1 as in month 0 (the growth
moves the mix, not the price of a kW)."""

import pytest

from solver.errors import Infeasible
from solver.solve import SolveSettings, solve
from solver.verify.hours import verify_hours
from tests.solver.time.test_hour_prices import (
    GPUS_OF_POWER,
    KW_PER_GPU,
    _instance,
    _load,
    _lone_rps,
    _power_dual_by_hand,
)


def _growth() -> float:
    q_x, q_y = _lone_rps("h100-sxm"), _lone_rps("h200")
    return (8 * q_x + 24 * q_y) / (16 * q_x + 16 * q_y) * (1 - 1e-9) - 1


def _over_two_months(load_rps: float, power_kw: float):
    months = {"horizon_months": 2, "monthly_growth": _growth(), "lead_time_months": 0}
    return _instance(load_rps, [1.0] * 24, power_kw, **months)


def test_each_month_states_its_power_and_the_cap_price_where_it_binds():
    q_x, q_y = _lone_rps("h100-sxm"), _lone_rps("h200")
    assert _load() == pytest.approx(16 * q_x + 16 * q_y) and 0 < _growth() < 0.05
    instance = _over_two_months(_load(), GPUS_OF_POWER * KW_PER_GPU)
    plan = solve(instance, SolveSettings.of(instance, mip_gap=0.0))  # hour-verified inside
    assert [m.month for m in plan.months] == [0, 1]
    for month in plan.months:
        (power,) = month.power_kw
        assert power.region == "east" and power.limit_kw == pytest.approx(32 * KW_PER_GPU)
        assert power.kw == pytest.approx(GPUS_OF_POWER * KW_PER_GPU)  # the cap, all used
        assert power.shadow_price_per_kw == pytest.approx(_power_dual_by_hand(24), rel=1e-3)
    # the plan's own power is month 0's: the busiest hour's draw, never above the cap
    # (it summed each GPU type's peak, in whichever hour each came)
    assert [p.kw for p in plan.power_kw] == [p.kw for p in plan.months[0].power_kw]
    mix = {p.gpu: p.count for p in plan.months[1].hours[0].pools}
    assert mix == {"h100-sxm": 8, "h200": 24}  # month 1: one server of H100, three of H200
    (power,) = plan.months[1].power_kw
    months = list(plan.months)
    months[1] = months[1].model_copy(
        update={"power_kw": (power.model_copy(update={"kw": 24 * KW_PER_GPU}),)}
    )
    found = verify_hours(instance, plan.model_copy(update={"months": tuple(months)}))
    assert [v.requirement for v in found.violations] == ["months[1].power_kw[0].kw"]


def test_a_loose_cap_states_its_power_and_no_price():
    instance = _over_two_months(_load() / 4, 1000.0)
    plan = solve(instance, SolveSettings.of(instance, mip_gap=0.0))
    for month in plan.months:
        (power,) = month.power_kw
        assert power.kw < power.limit_kw and power.shadow_price_per_kw == 0.0


def test_a_month_that_outgrows_the_power_cap_is_diagnosed_by_the_cap():
    """Month 0's load fits 32 GPUs of power exactly (half H100, half H200 capacity);
    month 1 grows by 60%, more than 32 GPUs of the denser H200 carry:
    32 q_Y < 1.6 (16 q_X + 16 q_Y) <=> 6.4 q_Y < 25.6 q_X <=> q_Y < 4 q_X. No commitment
    can serve it, and the diagnosis names the power cap, not only the month: the pre-solve
    check (solver.analysis.diagnose.horizon_problems) finds it before month 0 is solved,
    month 1 needing 1.6 x (16 q_X + 16 q_Y) / q_Y GPUs of power > 32 at best, where the
    month-by-month solve named month[1] and power[east] after solving month 0."""
    q_x, q_y = _lone_rps("h100-sxm"), _lone_rps("h200")
    assert 32 * q_y < 1.6 * (16 * q_x + 16 * q_y)
    months = {"horizon_months": 2, "monthly_growth": 0.6, "lead_time_months": 0}
    instance = _instance(_load(), [1.0] * 24, GPUS_OF_POWER * KW_PER_GPU, **months)
    with pytest.raises(Infeasible) as raised:
        solve(instance, SolveSettings.of(instance, mip_gap=0.0))
    (problem,) = raised.value.diagnosis.problems
    assert problem.requirement == "horizon_capacity[month 1]"
    assert f"regions[east].power_kw {GPUS_OF_POWER * KW_PER_GPU:,g}" in problem.message
