"""A batch workload may run its dedicated replicas on two tiers at once: some on GPUs the
plan holds anyway (a committed server the interactive pool leaves idle), the rest on
spot. The planner chose such plans, and its own verifier refused them, so `solve` ended
with an internal error: the hour verifier gave every dedicated pool the hour's spot GPUs
(10 spot of 17 dedicated read as each pool's whole share: all 17 at spot goodput, and
'1.41e+05 of 20,000,000 requests a day miss their 12 h deadline'), and priced them all
at the placement's one tier (17 x $2.40 x 730 = $29,784 against the plan's $19,564).

Hand case: Llama 3.1 8B, a chat that one TP1 replica carries all day (one 8-GPU server
committed at $1.5), a batch of 20M requests a day with a 12 h deadline, spot at $1.0 with
0.2 interruptions an hour. The plan: the server's 7 idle GPUs run batch, 10 more on spot."""

import math

import pytest
import yaml

from models.io.loading import validate_instance
from solver.solve import solve
from solver.verify.batch import dedicated_spot_share
from solver.verify.hours import verify_any

HOURS_PER_MONTH = 730.0
LISTED, RESERVED, SPOT = 2.40, 1.5, 1.0

INSTANCE = f"""
name: batch-tiers
gpus: [{{name: h100-sxm}}]
models: [{{name: llama-3.1-8b, weight_precisions: [fp8]}}]
regions:
  - name: east
    supply:
      h100-sxm: {{max_gpus: 64, price_per_gpu_hour: {LISTED}, reserved_price_per_gpu_hour:
        {RESERVED}, spot_price_per_gpu_hour: {SPOT}, spot_interruptions_per_hour: 0.2}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand: {{east: {{peak_requests_per_s: 30,
      hourly_profile: [1,1,1,1,1,1,2,3,4,4,4,4,4,4,4,4,4,3,3,2,2,2,1,1]}}}}
    prompt_tokens: {{mean: 1000, p99: 3000}}
    output_tokens: {{mean: 200, p99: 600}}
    slo: {{ttft_p99_ms: 1000, tpot_p99_ms: 50}}
  - name: summarise
    model: llama-3.1-8b
    deadline_hours: 12
    demand: {{east: {{requests_per_day: 20000000}}}}
    prompt_tokens: {{mean: 3000, p99: 8000}}
    output_tokens: {{mean: 300, p99: 800}}
policy:
  survive: none
  tensor_parallel: [1, 2]
"""


@pytest.fixture(scope="module")
def solved():
    instance = validate_instance(yaml.safe_load(INSTANCE), "batch-tiers.yaml")
    return instance, solve(instance)  # the hour verifier runs inside: it raised before


def test_a_batch_on_two_tiers_verifies_and_states_both(solved):
    instance, plan = solved
    assert verify_any(instance, plan).ok
    (row,) = plan.batch
    assert row.dedicated_tier == "on_demand+spot"
    hour = plan.hours[0]
    (gpus,) = hour.gpus
    dedicated = sum(p.gpus for p in hour.pools if p.workload == "summarise")
    assert 0 < gpus.spot < dedicated  # some on spot, the rest on the held server
    # the placement's cost: its spot GPUs at spot, the others at the listed price
    by_hand = HOURS_PER_MONTH * (gpus.spot * SPOT + (dedicated - gpus.spot) * LISTED)
    assert row.dedicated_cost_per_month == pytest.approx(by_hand)
    # the bill: one committed server all day, the spot GPUs by the hour
    assert plan.cost_per_month == pytest.approx(HOURS_PER_MONTH * (8 * RESERVED + gpus.spot * SPOT))


def test_the_hours_spot_gpus_are_shared_over_its_dedicated_pools(solved):
    _, plan = solved
    hour = plan.hours[0]
    (gpus,) = hour.gpus
    dedicated = sum(p.gpus for p in hour.pools if p.workload == "summarise")
    share = dedicated_spot_share(hour, "east", "h100-sxm", dedicated)
    assert share == pytest.approx(gpus.spot / dedicated)  # e.g. 10 / 17, not 1 per pool
    assert math.isclose(dedicated_spot_share(hour, "east", "h100-sxm", 0), 0.0)


def test_the_attribution_shares_the_rented_server_between_its_two_holders():
    """Without a reserved price the server the chat and the batch share is rented all day:
    8 x $2.40 x 730 = $14,016, beside 10 spot GPUs at $1.0 (730 x 10 = $7,300). The batch's
    two pools have one configuration key, and the attribution read the spot GPUs of that
    key as each pool's: the rented server's bill went to no one, the rows added up to $7,300
    of $21,316 and the verifier refused the plan (PlanRejected).
    Each hour the server's bill is shared by the GPUs not on spot (hour_attribution):
    chat's c_h of them against the batch's b_h - s_h (s_h on spot, whose bill is wholly the
    batch's). With one chat replica and 17 batch replicas all day that is chat 1/8 of
    $14,016 = $1,752; the rented server is paid all day, so a second chat replica in the
    busy hours (one batch replica fewer) costs the same and the solver may pick it: chat
    then pays sum_h c_h / (c_h + b_h - s_h) / 24 of $14,016."""
    data = yaml.safe_load(INSTANCE)
    del data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"]
    instance = validate_instance(data, "batch-tiers-rented.yaml")
    plan = solve(instance)
    (gpus,) = plan.hours[0].gpus
    assert (gpus.on_demand, gpus.spot) == (8, 10)  # one rented server, 10 spot GPUs
    server = HOURS_PER_MONTH * 8 * LISTED  # $14,016
    chat_share = spot_hours = 0.0
    for hour in plan.hours:
        chat = sum(p.gpus for p in hour.pools if p.workload == "chat")
        batch = sum(p.gpus for p in hour.pools if p.workload == "summarise")
        (held,) = hour.gpus
        assert held.on_demand == 8 and chat + batch - held.spot <= 8  # the rest on the server
        chat_share += chat / (chat + batch - held.spot) / len(plan.hours)
        spot_hours += held.spot / len(plan.hours)
    rows = {row.workload: row.cost_per_month for row in plan.cost_attribution}
    assert rows["chat"] == pytest.approx(server * chat_share)
    spot = HOURS_PER_MONTH * spot_hours * SPOT  # 10 GPUs all day: 730 x 10 x $1.0 = $7,300
    assert rows["summarise"] == pytest.approx(server * (1 - chat_share) + spot)
    assert sum(rows.values()) == pytest.approx(plan.cost_per_month)


def test_the_peak_fleet_holds_every_dedicated_replica(solved):
    """The batch's two tiers were two pools of one configuration in every hour, and the
    peak fleet (`replicas`: each configuration at its largest count) kept one of them: the
    region table read 10 summarise replicas beside a placement of 17 and hours running
    7 + 10. Now one pool of 17, its rate the count-weighted mean of the tiers'."""
    _, plan = solved
    (row,) = plan.batch
    (hour_pool,) = [p for p in plan.hours[0].pools if p.workload == "summarise"]
    (peak,) = [p for p in plan.replicas if p.workload == "summarise"]
    (gpus,) = plan.hours[0].gpus
    assert peak.count == hour_pool.count == row.dedicated_replicas
    assert peak.gpus == (8 - 1) + gpus.spot  # the held server's GPUs the chat leaves, and spot
