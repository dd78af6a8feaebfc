"""`sweep` and `compare` against hostile arguments and hourly instances (issue 36): a
sweep never writes its results or JSON over the grid's base instance nor resumes from
results solved for another version of it, and `compare`
judges an hourly plan with the hour verifier (it applied the static one and rejected an
hourly instance compared with itself)."""

import json

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def _copy_of_base(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"), encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"instance: {base}\naxes:\n  workloads[chat].demand.us-east.peak_requests_per_s: [10]\n",
        encoding="utf-8",
    )
    return base, grid


@pytest.mark.parametrize("flag", ["--out", "--json"])
def test_a_sweep_never_writes_over_its_base_instance(run_cli, tmp_path, flag):
    base, grid = _copy_of_base(tmp_path)
    before = base.read_bytes()
    run_checked(run_cli, "sweep", grid, flag, str(base), needles=("is the input file",))
    assert base.read_bytes() == before


def test_compare_judges_an_hourly_plan_hour_by_hour(run_cli, tmp_path):
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["workloads"][0]["demand"]["us-east"]["hourly_profile"] = [1] * 8 + [3] * 8 + [2] * 8
    source = tmp_path / "hourly.yaml"
    source.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_checked(run_cli, "compare", source, source, code=None)
    text = " ".join((result.stdout + result.stderr).split())
    assert "not cheaper" in text  # the same plan on both sides: no saving, no other reason
    assert "breaks a requirement" not in text and "independent verifier" not in text


def test_a_sweep_does_not_resume_from_results_for_another_price(run_cli, tmp_path):
    """A results line is reused only for the same instance: after the base's price
    changes from 2.40 to 4.80 a GPU-hour, the point is solved again and costs twice as
    much (the same GPUs at twice the price)."""
    base, grid = _copy_of_base(tmp_path)
    results, summary = tmp_path / "results.jsonl", tmp_path / "sweep.json"
    flags = ("--out", str(results), "--json", str(summary))
    run_checked(run_cli, "sweep", grid, *flags, code=0)
    first = json.loads(summary.read_text(encoding="utf-8"))["points"][0]["cost_per_month"]
    base.write_text(base.read_text().replace("price_per_gpu_hour: 2.4", "price_per_gpu_hour: 4.8"))
    result = run_checked(run_cli, "sweep", grid, *flags, code=0)
    second = json.loads(summary.read_text(encoding="utf-8"))["points"][0]["cost_per_month"]
    assert second == pytest.approx(2 * first)
    assert "solving them again" in result.stderr


def test_a_nan_cost_in_the_results_is_solved_again_and_the_json_stays_json(run_cli, tmp_path):
    _, grid = _copy_of_base(tmp_path)
    results, summary = tmp_path / "results.jsonl", tmp_path / "sweep.json"
    flags = ("--out", str(results), "--json", str(summary))
    run_checked(run_cli, "sweep", grid, *flags, code=0)
    line = json.loads(results.read_text(encoding="utf-8").splitlines()[-1])
    line["cost_per_month"] = float("nan")  # json.dumps writes NaN, which is not JSON
    results.write_text(json.dumps(line) + "\n", encoding="utf-8")
    run_checked(run_cli, "sweep", grid, *flags, code=0)

    def refuse(constant):
        raise ValueError(constant)

    points = json.loads(summary.read_text(encoding="utf-8"), parse_constant=refuse)["points"]
    assert points[0]["cost_per_month"] > 0
