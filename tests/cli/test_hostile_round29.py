"""Hostile input, round twenty-nine: found beside the input fuzz (tests/bench/fuzz_run.py at
seeds from 2901) and by hand on valid-but-extreme instances."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

NUL = "holds a NUL character (\\0), which no file or profile name can hold"


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [("policy: {", 'engine: "mine\\0.yaml"\npolicy: {', "engine"),
     ("{name: llama-3.1-8b,", '{name: llama-3.1-8b, config: "a\\0.json",', "models[0].config")],
    ids=["engine", "config"],
)  # fmt: skip
def test_a_nul_in_a_file_an_instance_names_is_refused_naming_the_field(
    run_cli, tmp_path, old, new, field
):
    """YAML's "\\0" is a NUL character in the string: `engine: "mine\\0.yaml"` and a
    `models[].config` holding one ended validate in exit 70 (ValueError: embedded null
    byte, from Path.resolve and os.stat)."""
    text = ONE_MODEL_ONE_REGION.read_text()
    assert old in text
    path = tmp_path / "i.yaml"
    path.write_text(text.replace(old, new, 1))
    run_checked(run_cli, "validate", path, needles=(f"{field}: {NUL}",))


def test_a_nul_in_a_grids_instance_is_refused_naming_it(run_cli, tmp_path):
    """The input fuzz (seed 2901, text:control at `instance`): the grid's base instance
    "one.yaml\\0\\x1b[2J" ended sweep in exit 70 (ValueError: embedded null byte)."""
    grid = tmp_path / "g.yaml"
    axis = "workloads[chat].demand.us-east.peak_requests_per_s: [10, 20]"
    grid.write_text(f'instance: "{ONE_MODEL_ONE_REGION}\\0\\e[2J"\naxes:\n  {axis}\n')
    run_checked(
        run_cli, "sweep", grid, "--out", tmp_path / "s.jsonl", needles=(f"instance: {NUL}",)
    )
    assert not (tmp_path / "s.jsonl").exists()


def test_a_static_plan_of_an_instance_with_a_horizon_passes_the_verifier(run_cli, tmp_path):
    """One model in one region with no hourly profile and no reserved or spot price is
    planned static: `policy.horizon_months: 24` has no effect (solve warns so) and solve
    writes today's plan, which verify then failed (exit 1) as 'the instance plans 24
    months (policy.horizon_months); the plan states none'. verify judges the horizon as
    solve reads it: a static instance plans no months."""
    months = ("--set", "policy.horizon_months=24", "--set", "policy.monthly_growth=0.05")
    plan = tmp_path / "plan.json"
    no_effect = ("policy.horizon_months: 24 has no effect on a static plan",)
    run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, *months, "--json", plan, code=0,
                needles=no_effect)  # fmt: skip
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, *months, code=0)
    assert "plans 24 months" not in result.stdout + result.stderr


def test_a_started_pool_past_the_supply_is_refused_before_the_physics(run_cli, tmp_path_factory):
    """The input fuzz (seed 2903, growth-horizon's plan, number:huge at
    months.3.hours.9.failover_starts.1.pool.count): replicas started after a region loss
    10^30 strong kept deploy past 120 s (verify alike: 300 s, then killed), Erlang's
    terms over 10^30 servers in the hour's scenario check. The hour's own pools were held
    to the supply before the physics, the started ones were not (the program's
    start_supply row holds warm and started within existing + max_gpus)."""
    import json

    from tests.guards import failing_after
    from tests.paths import INSTANCES
    from tests.solved_once import diurnal_at_a_5_percent_gap

    data = json.loads(json.dumps(diurnal_at_a_5_percent_gap(tmp_path_factory)[1]))
    hour = next(h for h in data["hours"] if h["failover_starts"])
    start = hour["failover_starts"][0]
    start["pool"]["count"] = 10**30
    plan = tmp_path_factory.mktemp("round29") / "plan.json"
    plan.write_text(json.dumps(data))
    pool = start["pool"]
    row = f"start_supply[{start['scenario']},{pool['region']},{pool['gpu']}]@t{hour['hour']:02d}"
    with failing_after(20, "verify of a started pool of 10^30 replicas"):
        result = run_checked(run_cli, "verify", INSTANCES / "diurnal-chat-batch.yaml", plan, code=1)
    assert row in result.stdout + result.stderr
    assert f"the replicas started after {start['scenario']} use " in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("demand", "violated"),
    [({"us-east": 7.9e-7, "eu-west": 4.2e-7}, False),  # each within 1e-6: the solver's rows
     ({"us-east": 2e-6}, True),  # one row short by 2e-6: past the solver's tolerance too
     ({"us-east": 9e-7, "eu-west": 9e-7, "ap-south": 1.3e-6}, True)],
    ids=["two-origins-within", "one-origin-past", "one-of-three-past"],
)  # fmt: skip
def test_the_verifier_tolerates_each_origins_shortfall_as_the_solver_does(demand, violated):
    """growth-horizon at monthly_growth -0.5 over 30 months ended solve in exit 70 (the
    solver's hourly plan failed the verifier): month 23 at 0.5^23 of today's demand held
    7.9e-7 requests/s of us-east users and 4.2e-7 of eu-west's at 4 UTC; the solver met
    each origin's demand row within its 1e-6 feasibility tolerance by no replica (its GPUs
    committed, a tie), and the verifier held their sum, 1.2e-6, to one 1e-6. By hand, no
    capacity anywhere: 1.2e-6 < 2 x 1e-6 passes; 2e-6 > 1 x 1e-6 fails; 3.1e-6 > 3 x 1e-6
    fails."""
    from models.operations.scenarios import Scenario, ScenarioKind
    from solver.verify.scenarios import _check_flow

    violations = []
    reach = {origin: {origin: 0.0} for origin in demand}
    capacity = dict.fromkeys(demand, 0.0)
    none = Scenario("none", ScenarioKind.NONE)
    _check_flow(none, "chat", demand, capacity, reach, violations)
    assert bool(violations) is violated, violations


@pytest.mark.parametrize("price", [2.125, 0.001])
def test_a_price_finer_than_a_cent_is_written_as_given_and_verifies(run_cli, tmp_path, price):
    """A GPU-hour priced $2.125 (or $0.001, the floor every price 0 was raised to) was
    written `price_per_gpu_hour: 2.12` (0.0) by solve, rounded to cents as the plan's
    monthly money is, and verify of that very plan failed, exit 1: 'gpus[0].
    price_per_gpu_hour: us-east h100-sxm: states $2.12/GPU-hour; the instance's price is
    $2.125'. The bill is still rounded to cents: 8 GPUs (one server) x $2.125 x 730 h =
    $12,410.00 a month."""
    import json

    sets = ("--set", f"regions[us-east].supply.h100-sxm.price_per_gpu_hour={price}")
    plan = tmp_path / "plan.json"
    solved = run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, *sets, "--json", plan, code=0)
    table = "GPUs by region and type"  # its row of 8 cells: region, GPU, ... $/GPU-h, $/month
    (line,) = [
        line
        for line in solved.stdout.split(table)[1].splitlines()
        if line.startswith("│ us-east │ h100-sxm │") and line.count("│") == 9
    ]
    assert f"│ {price:g} " in line  # the table's price is the JSON's, not "2.12" or "0.00"
    (row,) = json.loads(plan.read_text())["gpus"]
    assert row["price_per_gpu_hour"] == price
    assert row["cost_per_month"] == round(8 * price * 730, 2)
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, *sets, code=0)


def test_compare_judges_two_static_plans_on_month_0_whatever_their_growths(run_cli, tmp_path):
    """Two static instances (no hourly profile, no reserved or spot price) with
    `horizon_months: 12` and growths of 10% and 5% a month plan today's demand alone
    (solve warns that the horizon has no effect); compare refused the cheaper one, exit 1:
    'not the same demand: workload chat grows 5.0% a month in the candidate, 10.0% in the
    base, over the 12-month horizon both are judged on'. By hand, one server of 8 H100s
    either way: 8 x 730 h x $2.40 = $14,016 against x $2.00 = $11,680, $2,336/month less."""
    text = ONE_MODEL_ONE_REGION.read_text()
    assert "policy: {survive: none," in text
    base, candidate = tmp_path / "base.yaml", tmp_path / "candidate.yaml"
    for path, growth, price in ((base, 0.1, "2.4"), (candidate, 0.05, "2.0")):
        grown = f"policy: {{survive: none, horizon_months: 12, monthly_growth: {growth},"
        path.write_text(
            text.replace("policy: {survive: none,", grown).replace(
                "price_per_gpu_hour: 2.4", f"price_per_gpu_hour: {price}"
            )
        )
    result = run_checked(run_cli, "compare", base, candidate, code=0)
    assert "not the same demand" not in result.stdout
    assert "$2,336/month less" in result.stdout


@pytest.mark.parametrize(
    ("tp", "needle"),
    [(float("nan"), "world_info.tp_size (tp): nan must be a finite number above 0"),
     ({"value": 1}, "world_info.tp_size (tp): {'value': 1} is not a number"),
     (2, "tp: the file records 2, --tp says 1: the file's value is the run's; drop the flag")],
    ids=["nan", "map", "clash"],
)  # fmt: skip
def test_a_trtllm_bench_tp_the_file_cannot_hold_is_named_before_any_clash(
    run_cli, tmp_path, tp, needle
):
    """The input fuzz (seed 2906): a trtllm-bench report whose world_info.tp_size was NaN,
    a mapping or 31 digits, calibrated with --tp 1, was refused as a clash ("the file
    records nan, --tp says 1: ... drop the flag"), which sends the user to drop a flag
    that was right. The file's own value is judged first, named by the file's key; a
    real clash (2 against 1) still names the flag."""
    path = tmp_path / "report.json"
    report = {
        "world_info": {"tp_size": tp, "pp_size": 1},
        "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 64},
        "performance": {"system_output_throughput_tok_s": 9000.0},
    }
    path.write_text(json.dumps(report))  # a float NaN is written as JSON's NaN
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    run_checked(run_cli, "calibrate", path, *replica, "-o", tmp_path / "p.yaml", needles=(needle,))
