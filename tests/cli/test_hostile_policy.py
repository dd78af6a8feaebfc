"""Hostile input, round eight: policy switches that refine another the instance lacks.
Each was dropped without a word; now stderr names it and what it needs (the plan is
unchanged, as for growth without a horizon)."""

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION

ONE = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
"""One 8B chat workload in us-east: no prefixes, no spot price, no co-location."""


def _validated(run_cli, tmp_path, policy: dict, **sections):
    path = tmp_path / "inst.yaml"
    data = {**ONE, "policy": {**ONE["policy"], **policy}, **sections}
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return run_checked(run_cli, "validate", path, code=0)


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ({"multi_lora": True}, "policy.multi_lora: true has no effect: policy.colocation is off"),
        (
            {"spot_confidence": 0.99},
            "policy.spot_confidence: 0.99 has no effect: no supply entry offers spot",
        ),
        (
            {"prefix_affinity": True},
            "policy.prefix_affinity: true has no effect: no workload declares prefixes",
        ),
        # hostile10: the autoscaler's warm headroom is planned per hour only
        (
            {"burst_factor": 3},
            "policy.burst_factor: 3 has no effect on a static plan: the warm headroom",
        ),
        (
            {"scale_detection_s": 600},
            "policy.scale_detection_s: 600 has no effect on a static plan",
        ),
        (
            {"warm_cold_split": True},
            "policy.warm_cold_split: true has no effect: no workload declares prefixes",
        ),
        # hostile10: a spare's start time where no loss is planned for
        (
            {"failover_start_s": 30},
            "policy.failover_start_s: 30 has no effect: policy.survive is none",
        ),
        # hostile10: expert layouts for a dense 8B model (expert_layout_problem drops them)
        (
            {"expert_parallel": [1, 8]},
            "policy.expert_parallel: [1, 8] has no effect: no workload's model is a mixture",
        ),
        (
            {"attention_data_parallel": [4]},
            "policy.attention_data_parallel: [4] has no effect: no workload's model is a mixture",
        ),
    ],
)
def test_a_switch_without_what_it_refines_is_warned_about(run_cli, tmp_path, policy, said):
    assert f"warning: {said}" in _validated(run_cli, tmp_path, policy).stderr


def test_the_switches_with_what_they_refine_say_nothing(run_cli, tmp_path):
    workload = {**ONE["workloads"][0], "prefixes": [{"tokens": 500, "share": 0.5}]}
    supply = {
        "h100-sxm": {
            **ONE["regions"][0]["supply"]["h100-sxm"],
            "spot_price_per_gpu_hour": 1.0,
            "spot_interruptions_per_hour": 0.1,
        }
    }
    policy = {"multi_lora": True, "colocation": True, "spot_confidence": 0.99,
              "prefix_affinity": True}  # fmt: skip
    result = _validated(
        run_cli, tmp_path, policy, workloads=[workload],
        regions=[{**ONE["regions"][0], "supply": supply}],
    )  # fmt: skip
    assert "has no effect" not in result.stderr


@pytest.mark.parametrize(
    ("instance", "change"),
    [
        ("chat-3region.yaml", "policy.failover_start_s=30"),  # survive: region
        ("moe-ep.yaml", "policy.expert_parallel=[1, 8]"),  # an MoE model
        ("moe-ep.yaml", "policy.attention_data_parallel=[1, 8]"),
        ("diurnal-chat-batch.yaml", "policy.burst_factor=2"),  # an hourly plan
        ("diurnal-chat-batch.yaml", "policy.scale_detection_s=120"),
        ("prefix-affinity-doc-qa.yaml", "policy.warm_cold_split=true"),  # prefixes
    ],
)
def test_a_start_time_with_a_loss_and_expert_layouts_with_experts_say_nothing(
    run_cli, instance, change
):
    result = run_checked(run_cli, "validate", INSTANCES / instance, "--set", change, code=0)
    assert "has no effect" not in result.stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            "regions[us-east].supply.h100-sxm.reserved_price_per_gpu_hour=5",
            "regions[us-east].supply.h100-sxm.reserved_price_per_gpu_hour: 5 is above the "
            "on-demand 2.4 USD/GPU-hour",
        ),
        (
            "regions[us-east].supply.h200.spot_price_per_gpu_hour=9",
            "regions[us-east].supply.h200.spot_price_per_gpu_hour: 9 is above the on-demand "
            "3.1 USD/GPU-hour",
        ),
    ],
)
def test_a_price_above_on_demand_is_warned_about(run_cli, change, said):
    """hostile10: a reserved 5.00 beside an on-demand 2.40 (or a spot 9.00 beside 3.10)
    validated 'ok' and planned as if the offer were absent: paid every hour, or taken
    back, it never beats renting by the hour."""
    diurnal = INSTANCES / "diurnal-chat-batch.yaml"
    result = run_checked(run_cli, "validate", diurnal, "--set", change, code=0)
    assert f"warning: {said}" in result.stderr
    # with on demand capped, the dearer offer may be needed beside it: nothing said
    offer = change.split("_price_per_gpu_hour")[0].rsplit(".", 1)[0]
    cap = f"{offer}.max_on_demand_gpus=16"
    capped = run_checked(run_cli, "validate", diurnal, "--set", change, "--set", cap, code=0)
    assert "is above the on-demand" not in capped.stderr
