"""An hourly plan deployed and read back verifies as the plan does (solver.deploy.schedule).

Before, the fleet `fleet-import` read back from `deploy --target k8s` was the peak fleet
alone, judged as a static plan: diurnal-chat-batch ($26,163/month, verified) came back at
$61,904/month with 8 violations, the batch it soaks unserved and its region losses without
the replicas it starts. The schedule ConfigMap carries each hour's pools, GPU terms,
starts and soaks, the commitments and the months."""

import pytest
import yaml

from models.io.loading import validate_instance
from solver.deploy.files import deploy_files
from solver.deploy.fleet_import import (
    FleetImportError,
    fleet_plan,
    pools_from_objects,
    schedules_from_objects,
)
from solver.deploy.schedule import SCHEDULE_NAME
from solver.solve import solve
from solver.verify.hours import verify_any
from solver.verify.totals import money_close
from tests.solver.time.test_agree_saturated_prefill import INSTANCE as MONTHS

INSTANCE = """
name: hourly-round-trip
gpus: [{name: h100-sxm}]
models: [{name: llama-3.1-8b, weight_precisions: [fp8]}]
regions:
  - name: east
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.40, reserved_price_per_gpu_hour: 1.44}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand:
      east:
        requests_per_day: 4000000
        hourly_profile: [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]
    prompt_tokens: {mean: 1500, p99: 6000}
    output_tokens: {mean: 300, p99: 1000}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 50}
  - name: summarise
    model: llama-3.1-8b
    deadline_hours: 12
    demand: {east: {requests_per_day: 1000000}}
    prompt_tokens: {mean: 3000, p99: 8000}
    output_tokens: {mean: 300, p99: 800}
policy: {survive: none, tensor_parallel: [1], pipeline_parallel: [1]}
solver: {time_limit_s: 20}
"""


@pytest.fixture(scope="module")
def solved():
    instance = validate_instance(yaml.safe_load(INSTANCE), "hourly-round-trip.yaml")
    return instance, solve(instance)


def _objects(instance, plan) -> list:
    files = deploy_files(instance, plan, "k8s")
    return [doc for text in files.values() for doc in yaml.safe_load_all(text)]


def test_a_deployed_hourly_plan_reads_back_to_the_same_verdict_and_cost(solved):
    instance, plan = solved
    assert plan.hours and any(hour.batch_soak for hour in plan.hours)  # what it was built for
    objects = _objects(instance, plan)
    fleet = fleet_plan(pools_from_objects(objects), schedules_from_objects(objects))
    as_planned, read_back = verify_any(instance, plan), verify_any(instance, fleet)
    assert as_planned.ok and read_back.ok, read_back.violations
    assert money_close(read_back.cost_per_month, as_planned.cost_per_month)
    assert (read_back.total_gpus, read_back.gpus_bought) == (
        as_planned.total_gpus,
        as_planned.gpus_bought,
    )
    # the hours' counts are the plan's, the peak fleet the Deployments' normal + spare
    assert [tuple(p.count for p in h.pools) for h in fleet.hours] == [
        tuple(p.count for p in h.pools) for h in plan.hours
    ]


def test_without_its_schedule_the_fleet_is_the_peak_fleet_judged_static(solved):
    """What the schedule carries: the peak fleet alone, all day at on-demand prices, is
    dearer than the plan (reserved base, hourly rent), and its batch has no soak."""
    instance, plan = solved
    objects = [o for o in _objects(instance, plan) if o["kind"] != "ConfigMap"]
    static = verify_any(instance, fleet_plan(pools_from_objects(objects)))
    assert static.cost_per_month > plan.cost_per_month


def test_a_schedule_edited_past_what_runs_is_caught(solved):
    """The Deployments hold the peak count; a schedule hour above it is not the fleet."""
    instance, plan = solved
    objects = _objects(instance, plan)
    (schedule,) = schedules_from_objects(objects)
    schedule["hours"][12]["pools"][0]["count"] += 5
    fleet = fleet_plan(pools_from_objects(objects), [schedule])
    assert not verify_any(instance, fleet).ok


def test_two_schedules_or_a_foreign_key_are_refused(solved):
    instance, plan = solved
    objects = _objects(instance, plan)
    pools, (schedule,) = pools_from_objects(objects), schedules_from_objects(objects)
    with pytest.raises(FleetImportError, match=f"2 {SCHEDULE_NAME} ConfigMaps"):
        fleet_plan(pools, [schedule, schedule])
    with pytest.raises(FleetImportError, match="unknown key replicas"):
        fleet_plan(pools, [{**schedule, "replicas": []}])
    broken = [o for o in objects if o["kind"] == "ConfigMap"]
    broken[0]["data"]["schedule.json"] = "[1, 2"
    with pytest.raises(FleetImportError, match="is not JSON"):
        schedules_from_objects(broken)


def test_a_months_plan_reads_back_to_the_same_verdict_and_cost():
    """A months plan's month 0 is the plan's own hours: the fleet states no cost of its
    own, so month 0 is held to its offers and its hours' recomputed cost."""
    instance = validate_instance(yaml.safe_load(MONTHS), "months.yaml")
    plan = solve(instance)
    assert len(plan.months) == 2
    objects = _objects(instance, plan)
    fleet = fleet_plan(pools_from_objects(objects), schedules_from_objects(objects))
    as_planned, read_back = verify_any(instance, plan), verify_any(instance, fleet)
    assert as_planned.ok and read_back.ok, read_back.violations
    assert money_close(read_back.cost_per_month, as_planned.cost_per_month)
