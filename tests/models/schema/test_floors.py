"""Floors under the physical quantities of an instance (`low_why` in models/schema/limits.py
and catalog_limits.py).

A bandwidth, a FLOP rate or an efficiency of 1e-300 passed validation and crashed the
physics: a step of 10^300 s squared overflows (`OverflowError`, exit 70). A price or a
month of 1e-300 planned every cost as $0, a utilisation ceiling of 1e-300 made the solver
fail, and a prompt of 1e-300 tokens planned a fleet for prompts of nothing. Each now stops
at a floor with its reason; at the floors together the candidates' physics stays finite.
And `true` is not a number in the nested and efficiency fields either (it read as 1.0).
"""

import json

import pytest

from models.io.loading import validate_instance
from models.physics.catalog import gpu
from models.schema import catalog_limits, limits
from models.schema.errors import InputError


def _data() -> dict:
    """One region, one inline-overridable GPU, one 8B chat workload."""
    return {
        "name": "floors",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["bf16"]}],
        "regions": [{"name": "r", "supply": {"h100-sxm": {"max_gpus": 64}}}],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {"r": {"peak_requests_per_s": 5}},
                "prompt_tokens": {"mean": 1000, "p99": 4000},
                "output_tokens": {"mean": 300, "p99": 1000},
                "slo": {"ttft_p99_ms": 2000, "tpot_p99_ms": 100},
            }
        ],
    }


def _set(data: dict, path: tuple, value) -> dict:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value
    return data


FLOORS = [
    (("gpus", 0, "hbm_tb_s"), catalog_limits.HBM_TB_S, "gpus[0].hbm_tb_s"),
    (("gpus", 0, "scaleup_gb_s"), catalog_limits.SCALEUP_GB_S, "gpus[0].scaleup_gb_s"),
    (("gpus", 0, "scaleout_gbit_s"), catalog_limits.SCALEOUT_GBIT_S, "gpus[0].scaleout_gbit_s"),
    (("gpus", 0, "dense_tflops", "bf16"), catalog_limits.TFLOPS, "dense_tflops.bf16"),
    (("gpus", 0, "scaleup_fraction"), limits.EFFICIENCY_FRACTION, "gpus[0].scaleup_fraction"),
    (("efficiency", "hbm_fraction"), limits.EFFICIENCY_FRACTION, "efficiency.hbm_fraction"),
    (
        ("efficiency", "prefill_flops_fraction"),
        limits.EFFICIENCY_FRACTION,
        "efficiency.prefill_flops_fraction",
    ),
    (("policy", "max_utilization"), limits.MAX_UTILIZATION, "policy.max_utilization"),
    (("policy", "hours_per_month"), limits.HOURS_PER_MONTH, "policy.hours_per_month"),
    (
        ("regions", 0, "supply", "h100-sxm", "price_per_gpu_hour"),
        limits.USD_PER_GPU_HOUR,
        "supply.h100-sxm.price_per_gpu_hour",
    ),
    (("workloads", 0, "prompt_tokens", "mean"), limits.TOKENS, "prompt_tokens.mean"),
    (("policy", "demand_growth"), limits.DEMAND_GROWTH, "policy.demand_growth"),
]


@pytest.mark.parametrize(("path", "bound", "field"), FLOORS, ids=[f[2] for f in FLOORS])
@pytest.mark.parametrize("below", [1e-300, "just"])
def test_a_value_under_the_floor_is_refused_naming_field_and_floor(path, bound, field, below):
    value = bound.low / 2 if below == "just" else below
    with pytest.raises(InputError) as caught:
        validate_instance(_set(_data(), path, value), "floors.yaml")
    text = str(caught.value)
    assert field in text
    assert "the floor:" in text and bound.low_why[:40] in text


@pytest.mark.parametrize(("path", "bound", "field"), FLOORS, ids=[f[2] for f in FLOORS])
def test_the_floor_itself_is_accepted(path, bound, field):
    validate_instance(_set(_data(), path, bound.low), "floors.yaml")


def test_every_floor_sits_below_every_value_the_catalog_and_calibration_hold():
    """The floors refuse units mistakes, never a real GPU: every catalog GPU's figures lie
    at least 10x above them (the slowest memory, an L4-class GPU's, is 0.3 TB/s = 30 x
    0.01)."""
    for spec in (gpu(name) for name in ("a100-80gb-sxm", "h100-sxm", "l40s", "mi300x")):
        assert spec.hbm_tb_s >= 10 * catalog_limits.HBM_TB_S.low
        assert spec.dense_tflops.bf16 >= 10 * catalog_limits.TFLOPS.low
        assert spec.scaleup_gb_s >= 10 * catalog_limits.SCALEUP_GB_S.low
        assert spec.scaleout_gbit_s >= 10 * catalog_limits.SCALEOUT_GBIT_S.low


@pytest.mark.parametrize(
    ("demand", "growth", "refused"),
    [
        ({"peak_requests_per_s": 1e-6}, None, True),
        ({"requests_per_day": 5}, None, True),  # 5 / 86,400 = 5.8e-5 requests/s
        ({"requests_per_day": 10}, None, False),  # 10 / 86,400 = 1.16e-4
        ({"peak_requests_per_s": 0.05}, 0.001, True),  # 0.05 x 0.001 = 5e-5
        ({"peak_requests_per_s": 0.1}, 0.001, False),  # 0.1 x 0.001 = 1e-4
    ],
)
def test_a_peak_under_the_solver_tolerance_is_refused(demand, growth, refused):
    """The peak (times demand_growth) is held to LEAST_PEAK_RPS by the cross-check, not the
    field: the hourly and monthly rates derived from it may lie below."""
    data = _set(_data(), ("workloads", 0, "demand", "r"), demand)
    if growth is not None:
        data["policy"] = {"demand_growth": growth}
    if not refused:
        validate_instance(data, "floors.yaml")
        return
    with pytest.raises(InputError) as caught:
        validate_instance(data, "floors.yaml")
    assert "is below 0.0001 requests/s (LEAST_PEAK_RPS" in str(caught.value)


def test_a_demand_at_its_floor_is_planned_a_gpu(run_cli, tmp_path):
    """The floor keeps demand above the solver's tolerance: at 1e-4 requests/s the plan
    still buys a replica (at 1e-6 it bought none and cost $0)."""
    floor = limits.LEAST_PEAK_RPS
    data = _set(_data(), ("workloads", 0, "demand", "r", "peak_requests_per_s"), floor)
    file = tmp_path / "floor.json"
    file.write_text(json.dumps(data))
    result = run_cli("solve", file, "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["total_gpus"] >= 1


@pytest.mark.parametrize(
    "path",
    [
        ("gpus", 0, "dense_tflops", "bf16"),
        ("efficiency", "hbm_fraction"),
        ("efficiency", "request_overhead_s"),
        ("efficiency", "memory_reserve_fraction"),
        ("gpus", 0, "scaleup_fraction"),
    ],
)
def test_a_boolean_is_not_a_number_in_nested_and_efficiency_fields(path):
    with pytest.raises(InputError) as caught:
        validate_instance(_set(_data(), path, True), "floors.yaml")
    assert "a boolean is not a number" in str(caught.value)


def test_at_every_hardware_floor_at_once_the_solve_ends_with_an_answer(run_cli, tmp_path):
    """The slowest GPU the schema admits (every figure and every efficiency at its floor)
    serving a 70B model 100,000-token prompts: each step is slow but finite, so the solve
    ends with a plan or an infeasibility diagnosis (exit 0 or 3), never with the
    OverflowError (exit 70) that 1e-300 gave."""
    low = limits.EFFICIENCY_FRACTION.low
    data = _data()
    data["gpus"] = [
        {
            "name": "slowest",
            "hbm_gib": 4096,
            "hbm_tb_s": catalog_limits.HBM_TB_S.low,
            "dense_tflops": {"bf16": catalog_limits.TFLOPS.low},
            "scaleup_gb_s": catalog_limits.SCALEUP_GB_S.low,
            "gpus_per_node": 8,
            "scaleout_gbit_s": catalog_limits.SCALEOUT_GBIT_S.low,
            "tdp_w": 700,
            "price_per_gpu_hour": 1,
        }
    ]
    fractions = ["prefill_flops", "decode_flops", "hbm", "scaleup", "scaleout"]
    data["efficiency"] = {f"{name}_fraction": low for name in fractions}
    data["models"] = [{"name": "llama-3.1-70b", "weight_precisions": ["bf16"]}]
    workload = data["workloads"][0]
    workload["model"] = "llama-3.1-70b"
    workload["prompt_tokens"] = {"mean": 100_000, "p99": 120_000}
    workload["slo"] = {}
    data["regions"][0]["supply"] = {"slowest": {"max_gpus": 64}}
    data["policy"] = {"tensor_parallel": [1, 8], "pipeline_parallel": [1, 2]}
    validate_instance(data, "floors.yaml")
    file = tmp_path / "floors.json"
    file.write_text(json.dumps(data))
    result = run_cli("solve", file, "--time-limit", "60")
    assert result.exit_code in {0, 3}, result.stderr
