"""`fleetplan compare`: misleading wins rejected with their reason, a real win adopted."""

import json

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import compare_instances, side_of
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic

DEMAND = {"us": 20.0}


def one_gpu(gpu: str, price: float, **extra):
    instance = synthetic.instance(
        {"us": {gpu: (512, price)}},
        [synthetic.workload("chat", DEMAND)],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
        name=f"{gpu}-{price}",
    )
    if not extra:
        return instance
    data = instance.model_dump(mode="json", exclude_unset=True) | extra
    return validate_instance(data, instance.name)


@pytest.fixture(scope="module")
def base():
    return one_gpu("h100-sxm", 2.40)


def test_cheaper_gpu_hour_but_more_gpus_is_rejected(base):
    # an A100 at $2.30/GPU-h is cheaper per hour than an H100 at $2.40 but carries far
    # less per GPU (312 vs 989 dense BF16 TFLOPS, no FP8): more GPUs, a larger bill
    result = compare_instances(base, one_gpu("a100-80gb-sxm", 2.30))
    assert result.decision == "reject"
    assert result.candidate.usd_per_gpu_hour < result.base.usd_per_gpu_hour
    assert result.candidate.total_gpus > result.base.total_gpus
    assert any("cheaper per GPU-hour" in r and "more GPUs" in r for r in result.reasons)


def test_quality_regression_beyond_its_gate_is_rejected(base):
    quality = {"metric": "mmlu", "delta": -1.5, "max_regression": 1.0}
    cheaper = one_gpu("h100-sxm", 2.00, quality=quality)
    result = compare_instances(base, cheaper)
    assert result.decision == "reject"
    assert any(r.startswith("quality: mmlu changes by -1.5") for r in result.reasons)


def test_strictly_better_candidate_is_adopted_with_a_rollout(base):
    # the same fleet at $2.00 instead of $2.40 a GPU-hour: cost x 2.00 / 2.40
    quality = {"metric": "mmlu", "delta": -0.2, "max_regression": 1.0}
    result = compare_instances(base, one_gpu("h100-sxm", 2.00, quality=quality))
    assert result.decision == "adopt"
    assert result.candidate.cost_per_month == pytest.approx(
        result.base.cost_per_month * 2.00 / 2.40
    )
    assert result.candidate.total_gpus == result.base.total_gpus
    assert result.rollout["canary_share"] == pytest.approx(0.05)
    metrics = [w["metric"] for w in result.rollout["watch"]]
    assert "chat p99 TTFT" in metrics and "mmlu" in metrics
    assert result.rollout["rollback"]


def test_cli_exit_codes_and_json(run_cli, tmp_path, base):
    files = {}
    for name, instance in {"base": base, "cand": one_gpu("h100-sxm", 2.00)}.items():
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(instance.model_dump_json(exclude_unset=True))
    out = tmp_path / "decision.json"
    adopt = run_cli("compare", files["base"], files["cand"], "--json", out)
    assert adopt.exit_code == 0
    decision = json.loads(out.read_text())
    assert decision["decision"] == "adopt"
    assert set(decision) == {"decision", "reasons", "basis", "base", "candidate", "rollout"}
    reject = run_cli("compare", files["cand"], files["base"])
    assert reject.exit_code == 1
    assert "REJECT" in reject.stdout


# --- reports over what is paid (issue 35) ------------------------------------------------


def _whole_servers(existing: dict[str, dict[str, int]] | None):
    """150 requests/s of chat on H100s at $2.40 bought in whole 8-GPU servers: 4 GPUs in
    use, one server bought (the solve below asserts both)."""
    return synthetic.instance(
        {"us": {"h100-sxm": (512, 2.40)}},
        [synthetic.workload("chat", {"us": 150.0})],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
        policy={"buy_unit": "node"},
        existing=existing,
    )


def test_blended_gpu_hour_divides_the_bill_by_gpus_bought():
    instance = _whole_servers(None)
    plan = solve(instance, SolveSettings.of(instance, threads=1))
    (use,) = plan.gpus
    assert (use.used, use.purchased) == (4, 8), "4 GPUs in use, one 8-GPU server bought"
    side = side_of(instance, plan, "solved")
    # bill 8 x $2.40 x 730 h = $14,016 over 8 GPUs paid x 730 h = $2.40, the price paid
    # (over the 4 GPUs in use it read 8 x 2.40 / 4 = $4.80)
    assert side.cost_per_month == pytest.approx(8 * 2.40 * 730)
    assert (side.total_gpus, side.gpus_paid) == (4, 8)
    assert side.usd_per_gpu_hour == pytest.approx(2.40)


def test_owned_gpus_in_use_count_as_paid_at_no_price():
    instance = _whole_servers({"us": {"h100-sxm": 3}})
    plan = solve(instance, SolveSettings.of(instance, threads=1))
    (use,) = plan.gpus
    assert (use.used, use.existing, use.purchased) == (4, 3, 8), "1 GPU short: one server"
    side = side_of(instance, plan, "solved")
    # 8 bought + 3 owned in use = 11 GPUs paid; bill 8 x $2.40 x 730 h
    assert side.gpus_paid == 8 + 3
    assert side.usd_per_gpu_hour == pytest.approx(8 * 2.40 / (8 + 3))
