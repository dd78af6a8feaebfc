"""A sweep checks each plan of months at every point with the orders that point's lead
time places: the GPUs a month adds are ordered lead_time_months before it serves, a
consequence of the commitments, not a decision. A plan of a longer lead time serves a
shorter one (what arrives in time after 2 months' notice does after none).

Before, the sweep restated a plan's dollars at each point but kept the orders it stated
at its own lead time, so the verifier held it to them: an 8B chat on a 1-to-4 day growing
15% a month over 3 months, swept over lead_time_months 0 / 1, read 'no robust choice', each
plan failing the other point on 'month[1,east,h100-sxm]: states 0 GPUs ordered; later
months need 1 ordered this month'.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited, a flat day,
10.5 q growing 10% a month over 3 months: ceil(10.5 x 1.1^m) = 11, 12, 13 GPUs, reserved
at 1.2 against 2.0 on demand. With no lead time each month commits its own (month 1 adds
1, ordered in month 1; month 2 adds 1). With two months, month 1 keeps month 0's 11 and
rents 1 on demand, and month 2 commits 13: 2 added, ordered in month 0, and at lead time
0 ordered in month 2. The lead-0 plan adds a GPU in month 1, which at lead time 2 cannot
arrive: it fails that point, rightly."""

from functools import cache

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.studies.sweep import check_plans, solve_point
from solver.time.reprice import at_prices
from tests.solver.time.test_months import _data, _lone_rps

MONTHS = 3


@cache
def _instance(lead: int):
    return validate_instance(_data(10.5 * _lone_rps(), 0.10, lead, MONTHS), f"lead{lead}.yaml")


@cache
def _solved(lead: int) -> dict:
    return solve_point(_instance(lead))


def _ordered(plan: Plan) -> list[float]:
    return [sum(o.ordered_gpus for o in m.offers) for m in plan.months]


def test_a_plan_of_a_longer_lead_time_serves_a_shorter_one():
    records = {0: _solved(0), 1: _solved(2)}
    checks = check_plans(records, {0: _instance(0), 1: _instance(2)})
    of_lead_2 = next(c for c in checks if 1 in c.chosen_at)
    assert of_lead_2.serves == (0, 1), of_lead_2.failure
    of_lead_0 = next(c for c in checks if 0 in c.chosen_at)
    assert of_lead_0.fails == (1,)
    assert "cannot be ordered in time" in of_lead_0.failure[1]


def test_the_orders_are_restated_at_the_point_lead_time():
    record = _solved(2)
    plan = Plan.model_validate({k: record[k] for k in ("hours", "committed", "months")})
    committed = [sum(c.committed_gpus for c in m.committed or plan.committed) for m in plan.months]
    assert committed == [11, 11, 13]
    # month 0's 11 are ordered before the horizon (month -2); month 2's 2 in month 0
    assert _ordered(plan) == [13 - 11, 0, 0]
    # at lead time 0 each is ordered in the month it serves: month 0's 11 in month 0
    assert _ordered(at_prices(_instance(0), plan)) == [11, 0, 13 - 11]
