"""A static plan's cost attribution is its bill: each (region, GPU type)'s cost (whole
servers bought x price x hours) is shared among the pools on that type by their GPUs, so
a server's idle GPUs are paid by the workloads that run on it.

Hand case: two 8B workloads, each carried by one TP1 replica (1 GPU), in one region with
8-GPU servers at $2.40: one server bought, 8 x 2.40 x 730 = $14,016 a month, 2 GPUs used.
The rows read 1 x 2.40 x 730 = $1,752 each (the list price of the GPUs in use), adding
up to $3,504 of the $14,016 bill; now each pays half the server."""

import pytest
import yaml

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.fleet import verify

HOURS_PER_MONTH, PRICE, SERVER_GPUS = 730.0, 2.40, 8

INSTANCE = f"""
name: half-a-server
gpus: [{{name: h100-sxm}}]
models: [{{name: llama-3.1-8b, weight_precisions: [fp8]}}]
regions:
  - name: east
    supply: {{h100-sxm: {{max_gpus: 64, price_per_gpu_hour: {PRICE}}}}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand: {{east: {{peak_requests_per_s: 1}}}}
    prompt_tokens: {{mean: 1000, p99: 3000}}
    output_tokens: {{mean: 200, p99: 600}}
    slo: {{ttft_p99_ms: 1000, tpot_p99_ms: 50}}
  - name: search
    model: llama-3.1-8b
    demand: {{east: {{peak_requests_per_s: 1}}}}
    prompt_tokens: {{mean: 1000, p99: 3000}}
    output_tokens: {{mean: 200, p99: 600}}
    slo: {{ttft_p99_ms: 1000, tpot_p99_ms: 50}}
policy:
  survive: none
  tensor_parallel: [1]
"""


@pytest.fixture(scope="module")
def solved():
    instance = validate_instance(yaml.safe_load(INSTANCE), "half-a-server.yaml")
    return instance, solve(instance)


def test_each_workload_pays_half_the_server(solved):
    _, plan = solved
    assert [(p.workload, p.gpus) for p in plan.replicas] == [("chat", 1), ("search", 1)]
    bill = SERVER_GPUS * PRICE * HOURS_PER_MONTH  # one server: $14,016
    assert plan.cost_per_month == pytest.approx(bill)
    cost = {row.workload: row.cost_per_month for row in plan.cost_attribution}
    assert cost == pytest.approx({"chat": bill * 1 / 2, "search": bill * 1 / 2})  # $7,008
    assert sum(cost.values()) == pytest.approx(bill, abs=0.01)


def test_the_verifier_refuses_the_list_price_of_the_gpus_in_use(solved):
    instance, plan = solved
    assert verify(instance, plan).ok
    data = plan.model_dump(mode="json")
    for row in data["cost_attribution"]:
        row["cost_per_month"] = 1 * PRICE * HOURS_PER_MONTH  # the old rule: $1,752 each
    found = verify(instance, Plan.model_validate(data)).violations
    assert {v.requirement for v in found} == {
        "cost_attribution[0].cost_per_month",
        "cost_attribution[1].cost_per_month",
        "cost_attribution",
    }
