"""The hourly plan's headroom table and deploy state one queue-depth trigger.

A replica whose capacity batches prompts into shared prefill steps carries C > 1 / S (S the
prefill time of one mean prompt), so the M/G/1 prefill lane at u* C saturates and its mean
depth is infinite. deploy wrote the SLO edge T / S - 1 there; the plan's headroom table
wrote inf, and the verifier (every number in a plan finite) rejected the solver's own plan:
solve exit 70 on a 2-region Qwen3-30B-A3B months instance (C = 54.3 requests/s, S = 19.3
ms: u* C S = 1.05 at u* = 1). Both now read ScalingThresholds.queue_trigger."""

import math

import pytest
import yaml

from models.io.loading import validate_instance
from models.operations.autoscaling import scaling_thresholds
from models.serving.queueing import mg1_mean_wait_s
from solver.deploy.pools import deploy_pools
from solver.solve import solve


def test_a_saturated_prefill_lane_triggers_at_the_slo_edge():
    # C = 60 requests/s, S = 20 ms, H = 0 so u* = 1: rho = 60 x 0.02 = 1.2 >= 1
    saturated = scaling_thresholds(60.0, 0.0, 1, 10.0, 100.0, 0.02, 0.8, 1.5)
    assert math.isinf(saturated.queue_depth_scale_out)
    assert saturated.queue_trigger == pytest.approx(1.5 / 0.02 - 1)  # 74 prompts
    no_target = scaling_thresholds(60.0, 0.0, 1, 10.0, 100.0, 0.02, 0.8, None)
    assert no_target.queue_trigger == 0.0
    # C = 20, S = 20 ms: rho = 0.4, the M/G/1 depth lambda Wq itself
    below = scaling_thresholds(20.0, 0.0, 1, 10.0, 100.0, 0.02, 0.8, 1.5)
    assert below.queue_trigger == pytest.approx(20.0 * mg1_mean_wait_s(20.0, 0.02, 0.64))


INSTANCE = """
name: saturated-prefill
gpus: [{name: h100-sxm}]
models: [{name: qwen3-30b-a3b, weight_precisions: [fp8]}]
regions:
  - name: east
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.40, reserved_price_per_gpu_hour: 1.44}}
  - name: west
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.90, reserved_price_per_gpu_hour: 1.74}}
links: [[east, west, 60]]
workloads:
  - name: chat
    model: qwen3-30b-a3b
    demand:
      east: {requests_per_day: 1700000, peak_to_average: 1.0}
      west: {requests_per_day: 860000, peak_to_average: 1.0}
    prompt_tokens: {mean: 1000, p99: 4000}
    output_tokens: {mean: 200, p99: 800}
    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 50, availability: 0.999, max_failover_rtt_ms: 100}
policy:
  survive: region
  tensor_parallel: [1, 2, 4]
  pipeline_parallel: [1]
  horizon_months: 2
  monthly_growth: 0.1
  lead_time_months: 1
solver: {time_limit_s: 20}
"""


def test_the_plans_headroom_and_deploy_state_the_same_finite_trigger():
    instance = validate_instance(yaml.safe_load(INSTANCE), "saturated.yaml")
    plan = solve(instance)  # raised PlanRejected (inf queue depth) before
    assert plan.headroom
    saturated = 0
    for row in plan.headroom:
        assert math.isfinite(row.queue_depth_scale_out) and row.queue_depth_scale_out >= 0
        rate = row.target_utilization * row.capacity_rps_per_replica
        edge = row.queue_depth_slo_edge
        if edge is not None and rate * 1.5 / (edge + 1) >= 1:
            saturated += 1  # S = T / (edge + 1): the lane saturates, the edge is the trigger
            assert row.queue_depth_scale_out == pytest.approx(row.queue_depth_slo_edge)
    assert saturated  # the case this instance was written for
    for pool in deploy_pools(instance, plan):
        assert math.isfinite(pool.autoscale.queue_depth_scale_out)
