"""The instance schema: the reference file loads as it is; every class of bad input is
reported with its file, line and field, all at once."""

import json
import math

import pytest
import yaml

from models.io.loading import load_instance, validate_instance
from models.schema.errors import InputError
from models.schema.traffic import Demand, TokenDistribution
from tests.paths import DEFAULT_INSTANCE, REPO

SHARED_EXAMPLE = REPO.parent / "shared" / "examples" / "chat-3region.yaml"


def _reference() -> dict:
    return yaml.safe_load(DEFAULT_INSTANCE.read_text())


def _problems(data: dict) -> list[str]:
    with pytest.raises(InputError) as caught:
        validate_instance(data, "x.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_reference_instance_loads_with_its_names_and_meanings():
    instance = load_instance(DEFAULT_INSTANCE)
    assert [g.name for g in instance.gpus] == ["h100-sxm", "h200", "b200"]
    assert instance.region("us-east").supply["b200"].max_gpus == 64
    assert instance.price_per_gpu_hour("eu-west", "b200") == 5.60
    assert instance.links[0] == ("us-east", "us-west", 62)
    chat = instance.workloads[0]
    # 2,000,000 requests/day / 86,400 s/day x peak factor 4
    assert chat.demand["us-east"].peak_rps == pytest.approx(2_000_000 / 86_400 * 4)
    assert chat.demand["eu-west"].peak_rps == 30
    assert chat.slo.ttft_p99_ms == 800 and chat.slo.max_failover_rtt_ms == 100
    assert instance.policy.survive == "region"
    assert instance.solver.backend == "highs"


@pytest.mark.skipif(not SHARED_EXAMPLE.exists(), reason="shared/ not beside the clone")
def test_shared_example_is_the_default_instance():
    assert SHARED_EXAMPLE.read_text() == DEFAULT_INSTANCE.read_text()
    load_instance(SHARED_EXAMPLE)


def test_json_instances_load_too(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(_reference()))
    assert load_instance(path).name == "chat-70b-three-regions"


def test_catalog_fields_can_be_overridden_and_gpus_defined_inline():
    data = _reference()
    data["gpus"][0]["hbm_tb_s"] = 3.0
    data["gpus"][1]["dense_tflops"] = {"fp8": 1500}
    data["gpus"].append(
        {
            "name": "acme-x1",
            "hbm_gib": 96,
            "hbm_tb_s": 4.0,
            "dense_tflops": {"bf16": 800, "fp8": 1600},
            "scaleup_gb_s": 400,
            "gpus_per_node": 8,
            "scaleout_gbit_s": 400,
            "tdp_w": 700,
            "price_per_gpu_hour": 2.0,
        }
    )
    instance = validate_instance(data)
    assert instance.gpu_specs["h100-sxm"].hbm_tb_s == 3.0
    assert instance.gpu_specs["h100-sxm"].hbm_gib == 80  # untouched catalog field
    assert instance.gpu_specs["h200"].dense_tflops.fp8 == 1500
    assert instance.gpu_specs["h200"].dense_tflops.bf16 == 989
    assert instance.gpu_specs["acme-x1"].price_per_gpu_hour == 2.0


def test_inline_gpu_missing_fields_is_named():
    data = _reference()
    data["gpus"].append({"name": "acme-x2", "hbm_gib": 96})
    (problem,) = _problems(data)
    assert "gpus[3]" in problem and "inline" in problem and "hbm_tb_s" in problem


def test_unknown_key_suggests_the_right_one():
    data = _reference()
    data["workloads"][0]["slo"]["ttft_p99"] = 800
    (problem,) = _problems(data)
    assert "workloads[0].slo.ttft_p99" in problem and "did you mean 'ttft_p99_ms'" in problem


def test_all_problems_are_reported_at_once():
    data = _reference()
    data["workloads"][0]["demand"]["us-east"]["requests_per_day"] = -5
    data["workloads"][0]["prompt_tokens"] = {"mean": 1500, "p99": 600}
    data["regions"][0]["supply"]["h100-sxm"]["price_per_gpu_hour"] = 0
    problems = _problems(data)
    assert len(problems) == 3
    assert any("requests_per_day" in p and "greater than 0" in p for p in problems)
    assert any("prompt_tokens" in p and "at least the mean" in p for p in problems)
    assert any("price_per_gpu_hour" in p for p in problems)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["workloads"][0].update(model="llama-3.3-7b"), "unknown model 'llama-3.3-7b'"),
        (lambda d: d["regions"][0]["supply"].update(a100={"max_gpus": 8}), "unknown GPU 'a100'"),
        (lambda d: d["workloads"][0]["demand"].update(ap={"peak_requests_per_s": 1}), "region"),
        (lambda d: d["links"].append(["us-east", "mars", 300]), "unknown region 'mars'"),
        (lambda d: d["gpus"].append({"name": "h100-sxm"}), "duplicate name"),
        (lambda d: d["policy"].update(tensor_parallel=[3]), "power of two"),
    ],
)
def test_cross_references_are_checked(edit, expected):
    data = _reference()
    edit(data)
    problems = _problems(data)
    assert any(expected in p for p in problems), problems


def test_empty_workloads_is_rejected():
    data = _reference()
    data["workloads"] = []
    (problem,) = _problems(data)
    assert "workloads" in problem and "at least 1" in problem


def test_demand_takes_one_form():
    with pytest.raises(ValueError, match="either requests_per_day"):
        Demand(requests_per_day=10, peak_requests_per_s=1)
    with pytest.raises(ValueError, match="either requests_per_day"):
        Demand()


def test_token_histogram_statistics_by_hand():
    # 90% of prompts are 1,000 tokens, 10% are 10,000.
    dist = TokenDistribution(histogram=[(1000, 9), (10000, 1)])
    mean = 0.9 * 1000 + 0.1 * 10000  # 1,900
    variance = 0.9 * (1000 - mean) ** 2 + 0.1 * (10000 - mean) ** 2
    assert dist.mean_tokens == pytest.approx(mean)
    assert dist.cv == pytest.approx(math.sqrt(variance) / mean)
    assert dist.p99_tokens == 10000


def test_lognormal_spread_from_mean_and_p99():
    # p99/mean = exp(z s - s^2/2) with z = 2.3263 -> s = z - sqrt(z^2 - 2 ln 4) for p99 = 4 x mean
    z = 2.326347874
    sigma = z - math.sqrt(z**2 - 2 * math.log(4))
    expected_cv = math.sqrt(math.exp(sigma**2) - 1)
    assert TokenDistribution(mean=1500, p99=6000).cv == pytest.approx(expected_cv)
    assert TokenDistribution.fixed(512).cv == 0.0


@pytest.mark.parametrize(
    "field,value,twice",
    [
        ("tensor_parallel", [1, 2, 1], "1"),
        ("pipeline_parallel", [2, 2], "2"),
        ("expert_parallel", [1, 8, 8, 1], "8, 1"),  # in the order they come again
        ("attention_data_parallel", [4, 4], "4"),
    ],
)
def test_a_choice_listed_twice_is_refused_naming_it(field, value, twice):
    """`tensor_parallel: [1, 2, 1]` was read as [1, 2], one value dropped without a word."""
    data = _reference()
    data["policy"][field] = value
    assert _problems(data) == [
        f"x.yaml: policy.{field}: lists {twice} twice; give each choice once"
    ]


def test_a_weight_precision_listed_twice_is_refused_naming_it():
    data = _reference()
    data["models"][0]["weight_precisions"] = ["fp8", "bf16", "fp8"]
    (problem,) = _problems(data)
    assert "models[0].weight_precisions" in problem and "lists fp8 twice" in problem
