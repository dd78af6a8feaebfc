"""Procurement over months (issue 11): every month planned at its own grown demand, the
committed fleet never shrinking, orders placed a lead time ahead, and the verifier
checking each month on its own.

Hand cases use Llama 3.1 8B fp8 at TP 1 with fixed-length requests (TPOT-limited: a
replica carries q(1) in a pool of any size) and a flat day, so a month needs
ceil(rate_m / q) GPUs in every hour."""

import math

import pytest

from models.io.loading import validate_instance
from models.operations.procurement import month_instance
from solver.candidates.table import build_candidates
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.hours import verify_hours
from tests.synthetic import FLAT_SLO

ON_DEMAND, RESERVED = 2.0, 1.2
"""Reserved at 60% of on demand: a GPU busy all 24 hours is cheaper committed."""
HOURS_PER_MONTH = 730.0
DAYS = HOURS_PER_MONTH / 24


def _data(rate_rps: float, growth: float, lead: int, horizon: int) -> dict:
    return {
        "name": "months-by-hand",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [
            {
                "name": "r1",
                "supply": {
                    "h100-sxm": {
                        "max_gpus": 64,
                        "price_per_gpu_hour": ON_DEMAND,
                        "reserved_price_per_gpu_hour": RESERVED,
                    }
                },
            }
        ],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {"r1": {"peak_requests_per_s": rate_rps, "hourly_profile": [1] * 24}},
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                # the KV cache stops the batch: n replicas carry n q(1) at every n
                "slo": dict(FLAT_SLO),
            }
        ],
        "policy": {
            "buy_unit": "gpu",  # per-GPU orders here (whole servers: test_whole_servers.py)
            "tensor_parallel": [1],
            "replica_start_s": 0.0,
            "scale_detection_s": 0.0,
            "hours_per_month": HOURS_PER_MONTH,
            "horizon_months": horizon,
            "monthly_growth": growth,
            "lead_time_months": lead,
        },
    }


def _lone_rps() -> float:
    """q(1) of the only candidate, after checking that pooling adds nothing."""
    inst = validate_instance(_data(10.0, 0.0, 0, 1), "q.yaml")
    (candidate,) = build_candidates(inst).of("chat")
    assert candidate.limit.value == "kv_memory"  # q(n) = q(1) for every pool size
    assert candidate.ladder == () and candidate.ceiling == candidate.requests_per_s
    return candidate.requests_per_s


def _solved(rate_rps: float, growth: float, lead: int, horizon: int) -> tuple:
    inst = validate_instance(_data(rate_rps, growth, lead, horizon), "months.yaml")
    plan = solve(inst)  # the hour verifier (every month included) runs inside
    assert len(plan.months) == horizon
    return inst, plan


def _offer(month):
    (offer,) = month.offers
    return offer


def test_ten_percent_growth_with_a_two_month_lead_by_hand():
    q = _lone_rps()
    rate = 10.5 * q  # month m needs ceil(10.5 x 1.1^m) replicas of one GPU
    _, plan = _solved(rate, 0.10, lead=2, horizon=4)
    # 10.5 x 1.1^m = 10.5, 11.55, 12.705, 13.9755 -> 11, 12, 13, 14 GPUs every hour.
    need = [math.ceil(10.5 * 1.1**m) for m in range(4)]
    assert need == [11, 12, 13, 14]
    # A GPU busy 24 h/day costs 24 x 1.2 = 28.8 $/day committed < 24 x 2.0 = 48 on
    # demand, so each month commits its whole need where it can. Month 0 is the plan
    # itself (its commitment, 11, is the fleet the horizon starts with). Month 1 cannot
    # add any (an order takes 2 months; the earliest, in month 0, serves in month 2):
    # it keeps 11 and rents 1 on demand. Month 2 commits 13 (2 bought, ordered in
    # month 0), month 3 commits 14 (1 bought, ordered in month 1).
    committed = [11, 11, 13, 14]
    bought = [11, 0, 2, 1]
    order_month = [-2, None, 0, 1]
    ordered = [2, 1, 0, 0]
    for m, month in enumerate(plan.months):
        offer = _offer(month)
        assert offer.peak_need_gpus == need[m]
        assert offer.committed_gpus == committed[m]
        assert offer.owned_gpus == committed[m]  # no existing fleet
        assert offer.bought_gpus == bought[m]
        assert offer.order_month == order_month[m]
        assert offer.ordered_gpus == ordered[m]
        on_demand = need[m] - committed[m]
        assert offer.on_demand_gpu_hours == pytest.approx(DAYS * 24 * on_demand)
        expected = DAYS * 24 * (RESERVED * committed[m] + ON_DEMAND * on_demand)
        assert month.cost_per_month == pytest.approx(expected, rel=1e-9)
    # Month 0 is the plan's own month: the top-level cost keeps its meaning.
    assert plan.months[0].cost_per_month == pytest.approx(plan.cost_per_month, rel=1e-12)
    # Each month states its own plan's status; all four are proven, so the horizon is.
    assert [m.status for m in plan.months] == ["optimal"] * 4
    assert all(m.mip_gap is not None and m.mip_gap <= 1e-3 for m in plan.months)
    assert plan.status == "optimal"
    assert plan.months[0].hours == ()  # not repeated: it is plan.hours


def test_every_month_is_priced_by_its_own_pricing_lp_by_hand():
    """The hand case above, priced month by month (issue 32: every month goes through the
    pipeline's one sequence, its pricing LP included). In the pricing LP the counts are
    continuous: month m serves 10.5 x 1.1^m GPUs' worth of load. One more owned GPU in the
    day's one period (gpu_cover[r1,h100-sxm]@t00) saves the GPU at the margin for 24 h a
    day: a committed one (DAYS x 24 x 1.2) where the commitment may grow to the need,
    an on-demand one (DAYS x 24 x 2.0) in month 1, whose commitment is held at month 0's
    11 < 11.55 by the two-month lead."""
    q = _lone_rps()
    _, plan = _solved(10.5 * q, 0.10, lead=2, horizon=4)
    margin = [RESERVED, ON_DEMAND, RESERVED, RESERVED]
    rows = [plan.binding, *(month.binding for month in plan.months[1:])]
    assert plan.months[0].binding == ()  # month 0's rows are the plan's own
    for m, binding in enumerate(rows):
        (cover,) = [b for b in binding if b.family == "gpu_cover"]
        assert cover.name == "gpu_cover[r1,h100-sxm]@t00"
        assert (cover.period, cover.month) == (0, m)
        assert cover.shadow_price == pytest.approx(DAYS * 24 * margin[m], rel=1e-9)
        assert all(b.month == m for b in binding)
    for month in plan.months[1:]:
        assert "LP with the plan's discrete choices fixed" in month.shadow_price_note


def test_a_one_month_horizon_is_the_plan_itself():
    q = _lone_rps()
    _, plan = _solved(10.5 * q, 0.10, lead=2, horizon=1)  # asserts one month
    assert plan.horizon_cost == pytest.approx(plan.cost_per_month, rel=1e-12)
    assert [b.month for b in plan.binding] == [0] * len(plan.binding)


def test_the_idle_share_of_an_hourly_plan_is_over_the_gpus_paid_by_hand():
    """Month 0 of the hand case: 11 GPUs committed (paid every hour) for 10.5 GPUs' worth
    of load every hour: 1 - 10.5 / 11 idle, as a static plan counts it; month 1 pays 12
    for 10.5 x 1.1 = 11.55."""
    q = _lone_rps()
    _, plan = _solved(10.5 * q, 0.10, lead=2, horizon=4)
    assert _offer(plan.months[0]).committed_gpus == 11
    assert plan.idle_fraction == pytest.approx(1 - 10.5 / 11, rel=1e-6)
    # month 1: 11 committed + 1 rented on demand for 11.55 GPUs' worth of load
    assert plan.months[1].idle_fraction == pytest.approx(1 - 11.55 / 12, rel=1e-6)
    assert plan.months[0].idle_fraction == plan.idle_fraction


@pytest.mark.parametrize(
    ("growth", "lead"),
    [(-0.25, 0), (0.0, 1), (0.2, 0), (0.35, 1), (-0.1, 2)],
)
def test_the_committed_fleet_never_shrinks_and_each_month_serves_its_demand(growth, lead):
    q = _lone_rps()
    _, plan = _solved(7.3 * q, growth, lead=lead, horizon=4)
    counts = [_offer(m).committed_gpus for m in plan.months]
    assert counts == sorted(counts)  # bought GPUs are never sold back
    for m, month in enumerate(plan.months):
        offer = _offer(month)
        assert offer.peak_need_gpus == math.ceil(round(7.3 * (1 + growth) ** m, 9))
        if m < lead:  # nothing ordered within the horizon arrives yet
            assert offer.committed_gpus == counts[0]
        if growth < 0:  # shrinking demand: the month-0 commitment stays, nothing rented
            assert offer.committed_gpus == counts[0]
            assert offer.on_demand_gpu_hours == 0


def test_the_verifier_rejects_a_month_that_cannot_serve_its_demand():
    q = _lone_rps()
    inst, plan = _solved(10.5 * q, 0.10, lead=0, horizon=3)
    assert verify_hours(inst, plan).ok
    # Month 2 (13 GPUs needed) given month 1's fleet of 12: one replica short.
    months = list(plan.months)
    months[2] = months[2].model_copy(
        update={"hours": months[1].hours, "committed": months[1].committed}
    )
    broken = plan.model_copy(update={"months": tuple(months)})
    check = verify_hours(inst, broken)
    assert not check.ok
    assert any(v.requirement.startswith("month[2].demand") for v in check.violations), (
        check.violations
    )
    # Month 1 is untouched and still serves its own demand.
    assert not any(v.requirement.startswith("month[1]") for v in check.violations)


def test_the_verifier_rejects_an_order_placed_inside_the_lead_time():
    q = _lone_rps()
    inst, plan = _solved(10.5 * q, 0.10, lead=2, horizon=4)
    months = list(plan.months)
    late = _offer(months[3]).model_copy(update={"order_month": 2})  # 1 month, not 2
    months[3] = months[3].model_copy(update={"offers": (late,)})
    check = verify_hours(inst, plan.model_copy(update={"months": tuple(months)}))
    assert any(
        v.requirement == "month[3,r1,h100-sxm]" and "lead time 2" in v.message
        for v in check.violations
    ), check.violations


def test_month_instance_grows_every_rate_by_the_compounded_growth():
    inst = validate_instance(_data(100.0, 0.10, 0, 4), "g.yaml")
    grown = month_instance(inst, 3)
    rate = grown.workloads[0].demand["r1"].peak_requests_per_s
    assert rate == pytest.approx(100.0 * 1.1 * 1.1 * 1.1, rel=1e-12)


def test_a_plan_without_a_horizon_has_no_months():
    data = _data(10.0, 0.0, 0, 1)
    del data["policy"]["horizon_months"]
    plan: Plan = solve(validate_instance(data, "none.yaml"))
    assert plan.months == ()


def test_the_verifier_wants_each_month_of_the_horizon_once_in_order():
    q = _lone_rps()
    inst, plan = _solved(10.5 * q, 0.10, lead=0, horizon=2)
    far = plan.months[1].model_copy(update={"month": 10**9})  # never computed: refused first
    check = verify_hours(inst, plan.model_copy(update={"months": (plan.months[0], far)}))
    # and the summary's second order line still says it serves from month 1
    assert sorted(v.requirement for v in check.violations) == [
        "months[1].month",
        "summary.orders[1]",
    ]


def test_a_horizon_the_power_cap_cannot_carry_is_named_before_any_month_is_solved():
    """A 10 kW cap under 5.5 q(1) growing 20% a month for 3 months: an H100 draws
    0.7 x 10.2 / 5.6 = 1.275 kW and carries at most q(1) (its ceiling), so month m needs
    5.5 x 1.2^m x 1.275 kW at least: 7.0, 8.4, then 10.1 kW in month 2, over the cap.
    The month-by-month solve found it only in month 2; the pre-solve check names month 2
    and the field before month 0 is solved."""
    from solver.errors import Infeasible

    rate = 5.5 * _lone_rps()
    data = _data(rate, 0.2, 0, 3)
    data["regions"][0]["power_kw"] = 10.0
    with pytest.raises(Infeasible) as caught:
        solve(validate_instance(data, "capped.yaml"))
    diagnosis = caught.value.diagnosis
    assert diagnosis.method == "pre-solve check", diagnosis
    (problem,) = diagnosis.problems
    need_kw = 5.5 * 1.2**2 * 0.7 * 10.2 / 5.6  # 10.098
    assert problem.requirement == "horizon_capacity[month 2]"
    assert f"at least {need_kw:,.1f} kW" in problem.message
    assert "regions[r1].power_kw 10" in problem.message
    assert "policy.monthly_growth" in problem.remedy


def test_a_horizon_within_the_power_cap_is_not_refused():
    """The same cap over 2 months: 6 and ceil(6.6) = 7 GPUs, 7 x 1.275 = 8.9 kW <= 10."""
    rate = 5.5 * _lone_rps()
    data = _data(rate, 0.2, 0, 2)
    data["regions"][0]["power_kw"] = 10.0
    plan = solve(validate_instance(data, "capped.yaml"))
    assert [m.month for m in plan.months] == [0, 1]
