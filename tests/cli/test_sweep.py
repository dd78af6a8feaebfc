"""`fleetplan sweep` (issue 18): a 3 x 3 grid gives the costs of nine separate solves, on
a local process pool and on Ray; results stream to a JSON Lines file and resume; the
robust choice is the plan with the smallest worst-case cost that serves every point."""

import json
from pathlib import Path

import pytest

from cli.exit_codes import ExitCode
from models.io.overrides import apply_overrides, load_instance_with, parse_overrides
from models.schema.sweep_grid import read_grid
from solver.solve import solve
from solver.studies.sweep import ray_available
from tests.paths import ONE_MODEL_ONE_REGION

DEMAND = "workloads[chat].demand.us-east.peak_requests_per_s"
PRICE = "regions[us-east].supply.h100-sxm.price_per_gpu_hour"
DEMANDS = (10, 20, 40)
PRICES = (2.0, 2.4, 3.0)
HOURS_PER_MONTH = 730


def _grid(folder: Path) -> Path:
    grid = folder / "grid.yaml"
    grid.write_text(
        f"instance: {ONE_MODEL_ONE_REGION}\n"
        "set: {policy.buy_unit: gpu}\n"
        "axes:\n"
        f"  {DEMAND}: {list(DEMANDS)}\n"
        f"  {PRICE}: {list(PRICES)}\n"
    )
    return grid


def _separate_costs() -> list[float]:
    """The nine points solved one by one, as `solve --set` would."""
    costs = []
    for demand in DEMANDS:
        for price in PRICES:
            sets = ["policy.buy_unit=gpu", f"{DEMAND}={demand}", f"{PRICE}={price}"]
            costs.append(solve(load_instance_with(ONE_MODEL_ONE_REGION, parse_overrides(sets))))
    return [plan.cost_per_month for plan in costs]


@pytest.fixture(scope="module")
def separate_costs() -> list[float]:
    return _separate_costs()


def _sweep(run_cli, folder: Path, *flags: str) -> dict:
    out = folder / "sweep.json"
    result = run_cli("sweep", _grid(folder), *flags, "--json", out)
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text())


def test_a_3x3_grid_on_a_local_pool_gives_the_costs_of_nine_solves(
    run_cli, tmp_path, separate_costs
):
    data = _sweep(run_cli, tmp_path, "--executor", "local", "--jobs", "2")
    assert [p["cost_per_month"] for p in data["points"]] == pytest.approx(separate_costs)
    # by hand: each point buys whole GPUs at its price; 1 GPU carries 20 req/s and more
    for point, cost in zip(data["points"], separate_costs, strict=True):
        gpus = point["total_gpus"]
        assert cost == pytest.approx(gpus * point["set"][PRICE] * HOURS_PER_MONTH)


def test_the_robust_choice_serves_every_point_at_the_least_worst_case_cost(run_cli, tmp_path):
    data = _sweep(run_cli, tmp_path)
    robust = next(p for p in data["plans"] if p["plan"] == data["robust"])
    # The fleet of the 40 req/s points serves the smaller demands too; its worst case is
    # at the highest price: its GPUs x $3.00 x 730 h.
    assert len(robust["serves"]) == 9 and not robust["fails"]
    assert robust["worst_cost_per_month"] == pytest.approx(
        robust["total_gpus"] * max(PRICES) * HOURS_PER_MONTH
    )
    for plan in data["plans"]:  # every other plan either fails a point or costs more
        assert plan["fails"] or plan["worst_cost_per_month"] >= robust["worst_cost_per_month"]
    smaller = [p for p in data["plans"] if p["total_gpus"] < robust["total_gpus"]]
    assert smaller and all(p["fails"] for p in smaller)


def test_results_stream_to_json_lines_and_a_second_run_resumes(run_cli, tmp_path):
    lines = tmp_path / "points.jsonl"
    grid = _grid(tmp_path)
    first = run_cli("sweep", grid, "--out", lines)
    assert first.exit_code == 0, first.stderr
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    assert sorted(r["point"] for r in records) == list(range(9))
    for r in records:  # the gap a status may embed, as a number beside it
        assert r["plan_status"] in ("optimal", f"feasible (gap {r['mip_gap']:.2%})")
    # a run killed mid-write: the last line is cut; the resumed run solves that point only
    kept = lines.read_text().splitlines()[:-1]
    lines.write_text("\n".join(kept) + '\n{"point": 8, "key": "[[\\"work')
    second = run_cli("sweep", grid, "--out", lines)
    assert second.exit_code == 0, second.stderr
    assert "9 points, 1 to solve (8 already in" in second.stderr
    third = run_cli("sweep", grid, "--out", lines)
    assert "9 points, 0 to solve" in third.stderr


def test_a_bad_axis_path_exits_2_naming_it(run_cli, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  workloads[nope].slo: [1]\n")
    result = run_cli("sweep", grid)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "no element named 'nope'" in result.stderr


def test_a_malformed_grid_file_is_worded_as_an_instance_file_is(run_cli, tmp_path):
    """It read pydantic's 'Field required', 'Extra inputs are not permitted' and
    'Dictionary should have at least 1 item after validation, not 0', without lines."""
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"base: {ONE_MODEL_ONE_REGION}\naxes: {{}}\n")
    result = run_cli("sweep", grid)
    assert result.exit_code == ExitCode.BAD_INPUT
    lines = [line.strip() for line in result.stderr.splitlines()]
    assert f"{grid}: instance: required field is missing" in lines
    assert f"{grid}:1: base: unknown key 'base'; a grid has instance, set, axes" in lines
    assert f"{grid}:2: axes: is empty; give at least one axis (a --set path and its values)" in (
        lines
    )
    grid.write_text("instance: nowhere.yaml\naxes: {demand_growth: [1.0]}\n")
    result = run_cli("sweep", grid)
    assert f"{grid}:1: instance: {tmp_path / 'nowhere.yaml'}: no such file" in result.stderr


@pytest.mark.parametrize("bad", [".nan", ".inf", "-.inf"])
def test_a_non_finite_grid_value_exits_2_naming_it_before_any_solve(run_cli, tmp_path, bad):
    grid = tmp_path / "grid.yaml"
    out = tmp_path / "points.jsonl"
    grid.write_text(
        f"instance: {ONE_MODEL_ONE_REGION}\nset: {{demand_growth: 1.0}}\n"
        f"axes:\n  {DEMAND}: [10, {bad}]\n"
    )
    result = run_cli("sweep", grid, "--out", out)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert f"axes.{DEMAND}[1]" in result.stderr
    assert "not a finite number" in result.stderr
    assert not out.exists()  # nothing solved, nothing written


@pytest.mark.skipif(not ray_available(), reason="ray is not installed (pip install fleetplan[ray])")
def test_a_3x3_grid_on_ray_gives_the_costs_of_nine_solves(run_cli, tmp_path, separate_costs):
    data = _sweep(run_cli, tmp_path, "--executor", "ray", "--jobs", "2")
    assert [p["cost_per_month"] for p in data["points"]] == pytest.approx(separate_costs)


def test_grid_paths_quote_names_holding_dots_and_brackets(tmp_path):
    """A grid's `set` and axis paths take the quoting of `--set`: regions named
    `eu-west[1]` and `ap.south` are reached, and each point puts its value there."""
    (tmp_path / "odd.yaml").write_text(
        "regions:\n"
        "  - {name: 'eu-west[1]', supply: {h100-sxm: {price_per_gpu_hour: 2.4}}}\n"
        "workloads:\n"
        "  - {name: chat, demand: {ap.south: {peak_requests_per_s: 1}}}\n"
    )
    price = 'regions["eu-west[1]"].supply.h100-sxm.price_per_gpu_hour'
    (tmp_path / "grid.yaml").write_text(
        "instance: odd.yaml\n"
        "set: {'workloads[chat].demand.\"ap.south\".peak_requests_per_s': 5}\n"
        f"axes: {{'{price}': [2.0, 3.0]}}\n"
    )
    grid = read_grid(tmp_path / "grid.yaml")
    assert grid.base["workloads"][0]["demand"] == {"ap.south": {"peak_requests_per_s": 5}}
    prices = [
        apply_overrides(grid.base, point.overrides())["regions"][0]["supply"]["h100-sxm"]
        for point in grid.points
    ]
    assert prices == [{"price_per_gpu_hour": 2.0}, {"price_per_gpu_hour": 3.0}]
