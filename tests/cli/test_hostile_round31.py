"""Hostile input, round thirty-one: found by hand on valid-but-extreme hourly and months
instances (agreement properties: a looser input never costs more, solve -> verify) and
beside the input fuzz (tests/bench/fuzz_run.py at seeds from 3101)."""

import json

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

DAY = "[1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]"


def _hourly(tmp_path):
    """The one-model instance with a diurnal day of 20 M requests, single GPUs and a
    reserved price: an hourly plan of 4 to 11 replicas (0.7 s)."""
    text = ONE_MODEL_ONE_REGION.read_text()
    demand = "demand: {us-east: {peak_requests_per_s: 20}}"
    supply = "{max_gpus: 64, price_per_gpu_hour: 2.4}"
    assert demand in text and supply in text and "pipeline_parallel: [1]}" in text
    text = text.replace(
        demand, f"demand: {{us-east: {{requests_per_day: 20000000, hourly_profile: {DAY}}}}}"
    )
    text = text.replace(supply, "{max_gpus: 128, price_per_gpu_hour: 2.4, "
                        "reserved_price_per_gpu_hour: 1.5}")  # fmt: skip
    text = text.replace("pipeline_parallel: [1]}", "pipeline_parallel: [1], buy_unit: gpu}")
    path = tmp_path / "hourly.yaml"
    path.write_text(text)
    return path


def test_a_replica_start_of_a_day_costs_no_less_than_one_of_hours(run_cli, tmp_path):
    """policy.replica_start_s at its bound, 86,400 s, planned $10,877/month where 7,200 s
    planned $12,045 (and 80,000 s $11,753): the warm headroom took the rise over exactly
    the lag, d(t) - d(t - L), which on the cyclic day falls again once L passes the day's
    rise (0 at a day: yesterday's rate taken for a forecast). A slower start needs at
    least the headroom of a faster one; at a lag past the day's rise every hour runs the
    peak, 11 reserved GPUs x $1.5 x 730 h = $12,045."""
    instance = _hourly(tmp_path)
    costs = {}
    for start in (7200, 86400):
        plan = tmp_path / f"plan-{start}.json"
        run_checked(run_cli, "solve", instance, "--set", f"policy.replica_start_s={start}",
                    "--json", plan, code=0)  # fmt: skip
        costs[start] = json.loads(plan.read_text())["cost_per_month"]
    assert costs[7200] == 11 * 1.5 * 730
    assert costs[86400] >= costs[7200]


def test_a_golden_edited_below_zero_is_a_bad_golden_not_an_improvement(run_cli, tmp_path):
    """A golden file edited by hand to cost_per_month -5 read the plan at $14,016 as
    (14,016 - (-5)) / -5 = -280,420%: cheaper, an `improvement`, exit 0. A golden's costs
    and GPU counts are >= 0 and its idle share within 0..1: each is a bad golden, named
    field by field (a regression of that instance, exit 1)."""
    folder = tmp_path / "goldens"
    folder.mkdir()
    (folder / "one.yaml").write_bytes(ONE_MODEL_ONE_REGION.read_bytes())
    run_checked(run_cli, "batch", folder, "--update", code=0)
    golden = folder / "one.expected.json"
    frozen = json.loads(golden.read_text())
    assert frozen["cost_per_month"] == 14016.0  # 8 GPUs (one server) x $2.4 x 730 h
    for field, value in (("cost_per_month", -5), ("idle_fraction", -3), ("gpus_bought", -8)):
        golden.write_text(json.dumps({**frozen, field: value}))
        result = run_checked(run_cli, "batch", folder, "--check", code=1)
        shown = " ".join((result.stdout + result.stderr).split())
        assert "improvement" not in shown
        assert "bad golden file" in shown and f"one.expected.json:1: {field}: " in shown
        assert f"greater than or equal to 0 (got {value})" in shown


def test_a_golden_that_is_a_symlink_loop_is_named_not_taken_for_none(run_cli, tmp_path):
    """A golden file that is a symlink to itself read as 'no golden file: solve, check the
    plan, then run with --update' (Path.exists is False for a loop), and --update then
    failed on the loop. The link is read as every input is and refused, named."""
    folder = tmp_path / "goldens"
    folder.mkdir()
    (folder / "one.yaml").write_bytes(ONE_MODEL_ONE_REGION.read_bytes())
    golden = folder / "one.expected.json"
    golden.symlink_to(golden)
    result = run_checked(run_cli, "batch", folder, "--check", code=1)
    shown = " ".join((result.stdout + result.stderr).split())
    assert "no golden file" not in shown
    assert "bad golden file" in shown and "one.expected.json: cannot read:" in shown


def test_a_schedule_number_past_a_float_is_refused_by_fleet_import(run_cli, tmp_path):
    """An hourly plan's schedule ConfigMap (deploy --target k8s) edited by hand to
    `"cost_per_hour": 1e999` was read as inf, fleet-import exited 0 and wrote it to the
    plan-out as null (verify then refused fleet-import's own file; a months[].mip_gap of
    1e999 became no gap and verify passed). Now refused, naming the key in the JSON."""
    import yaml

    instance = _hourly(tmp_path)
    plan, manifests = tmp_path / "plan.json", tmp_path / "k8s"
    run_checked(run_cli, "solve", instance, "--json", plan, code=0)
    run_checked(run_cli, "deploy", plan, "--instance", instance, "--target", "k8s",
                "-o", manifests, code=0)  # fmt: skip
    path = manifests / "fleetplan-schedule.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    schedule = json.loads(documents[0]["data"]["schedule.json"])
    schedule["hours"][1]["cost_per_hour"] = 12345.678
    documents[0]["data"]["schedule.json"] = json.dumps(schedule).replace("12345.678", "1e999")
    path.write_text(yaml.safe_dump_all(documents))
    out = tmp_path / "fleet.json"
    run_checked(
        run_cli, "fleet-import", manifests, "--instance", instance, "--instance-out",
        tmp_path / "owned.yaml", "--plan-out", out,
        needles=("data.schedule.json: hours[1].cost_per_hour is not a finite number",),
    )  # fmt: skip
    assert not out.exists()
