"""`fleetplan solve`, `verify` and `explain` from the command line: exit codes 0-4, the
tables a planner reads, files that never clobber a directory, never a traceback."""

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from solver.plan.schema import Plan
from solver.program.lp import SolveResult, Termination
from solver.program.optimised import Optimised
from tests.paths import DEFAULT_INSTANCE, ONE_MODEL_ONE_REGION
from tests.solved_once import solving_default_once
from tests.synthetic import instance, workload


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, default_solved) -> tuple[str, str, str]:
    """The default instance solved through the command line, writing JSON and Markdown
    files beside its tables: (tables, JSON, Markdown). Its solve is the session's
    (tests.solved_once: the same call, made once a run)."""
    folder = tmp_path_factory.mktemp("plan")
    path, markdown = folder / "plan.json", folder / "plan.md"
    argv = ["solve", str(DEFAULT_INSTANCE), "--json", str(path), "--markdown", str(markdown)]
    with solving_default_once(default_solved):
        result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    return result.stdout, path.read_text(), markdown.read_text()


@pytest.fixture(scope="module")
def default_plan_json(default_run) -> str:
    return default_run[1]


def test_solve_prints_the_plan_cost_binding_and_utilisation(default_run):
    text = default_run[0]
    assert "chat-70b-three-regions: optimal, $" in text
    for heading in ("GPUs by region and type", "Binding constraints", "Utilisation by scenario"):
        assert heading in text
    assert "capacity[lose=" in text and "demand[" in text
    assert "$/month per request/s" in text
    assert "not MIP duals" in text


def test_json_and_markdown_are_written(default_run, default_plan_json):
    plan = Plan.model_validate_json(default_plan_json)
    assert plan.status == "optimal" and plan.cost_per_month > 0
    data = json.loads(default_plan_json)
    for key in ("status", "cost_per_month", "total_gpus", "replicas", "binding", "scenarios"):
        assert key in data
    pool = data["replicas"][0]
    for key in ("workload", "region", "gpu", "precision", "tp", "pp", "role", "count", "gpus"):
        assert key in pool
    assert {"name", "slack", "shadow_price"} <= set(data["binding"][0])

    text = default_run[2]
    assert text.startswith("# chat-70b-three-regions: optimal")
    assert "## Binding constraints" in text and "| constraint | slack |" in text


def test_output_to_a_directory_is_refused_without_a_traceback(tmp_path, run_cli):
    result = run_cli("solve", DEFAULT_INSTANCE, "--json", tmp_path)
    assert result.exit_code == 2
    assert "is a directory" in result.stderr and "Traceback" not in result.stderr
    assert tmp_path.is_dir()


def test_verify_accepts_the_plan_and_rejects_a_broken_one(tmp_path, run_cli, default_plan_json):
    good = tmp_path / "good.json"
    good.write_text(default_plan_json)
    result = run_cli("verify", DEFAULT_INSTANCE, good)
    assert result.exit_code == 0, result.stderr
    assert "ok" in result.stdout

    data = json.loads(default_plan_json)
    largest = max(data["replicas"], key=lambda p: p["count"])
    largest["count"] -= 5  # 10 GPUs fewer: a whole server less to buy, so the cost moves
    largest["gpus"] = largest["count"] * largest["tp"] * largest["pp"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    result = run_cli("verify", DEFAULT_INSTANCE, broken)
    assert result.exit_code == 1
    assert "verify failed" in result.stderr
    assert "cannot be served" in result.stderr  # the lost capacity, with numbers
    assert "cost: states $" in result.stderr  # and the stated cost no longer matches


def test_verify_warns_when_the_plan_is_another_instances(tmp_path, run_cli, default_plan_json):
    """A plan whose `instance` names another instance is still judged against this one
    (the verdict is this instance's: here the same fleet, so ok), with a warning naming
    both, so that checking the wrong file is not silent."""
    data = json.loads(default_plan_json)
    assert "warning" not in run_cli("verify", DEFAULT_INSTANCE, _written(tmp_path, data)).stderr
    data["instance"] = "other"
    result = run_cli("verify", DEFAULT_INSTANCE, _written(tmp_path, data))
    assert result.exit_code == 0, result.stderr
    assert "plan of instance 'other'" in result.stderr and "chat-70b-three-regions" in result.stderr


def _written(tmp_path, data):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    return path


def test_verify_rejects_a_file_that_is_not_a_plan(tmp_path, run_cli):
    bad = tmp_path / "bad.json"
    bad.write_text('{"replicas": [{"workload": "chat"}]}')
    result = run_cli("verify", DEFAULT_INSTANCE, bad)
    assert result.exit_code == 2
    assert f"{bad}:1: replicas[0].region: required field is missing" in result.stderr
    assert "Traceback" not in result.stderr


def two_region_file(tmp_path):
    """Two regions surviving the loss of either, east with a second GPU type (A100, bf16)
    to fall back on: every table of `explain` has rows, and its re-solves are small (the
    default instance's took a minute)."""
    inst = instance(
        {
            "east": {"h100-sxm": (64, 2.0), "a100-80gb-sxm": (64, 1.2)},
            "west": {"h100-sxm": (64, 2.1)},
        },
        [workload("chat", {"east": 30.0, "west": 20.0}, max_failover_rtt_ms=80)],
        gpus=["h100-sxm", "a100-80gb-sxm"],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
        links=[("east", "west", 50)],
        survive="region",
        name="two-regions",
    )
    path = tmp_path / "two-regions.json"
    path.write_text(inst.model_dump_json(exclude_unset=True))
    return path


def test_explain_prints_limits_alternatives_and_slack(tmp_path, run_cli, no_engine_effects):
    result = run_cli("explain", two_region_file(tmp_path))
    assert result.exit_code == 0, result.stderr
    for heading in (
        "Binding constraints",
        "Limiting factor of each chosen configuration",
        "Without each chosen pool",
        "Utilisation by scenario",
        "Slack by constraint family",
    ):
        assert heading in result.stdout


def infeasible_file(tmp_path):
    """A region whose failover partner is out of reach, written as an instance file."""
    inst = instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.0)}},
        [workload("chat", {"east": 10.0, "west": 5.0}, max_failover_rtt_ms=100)],
        links=[("east", "west", 150)],
        survive="region",
        name="unreachable",
    )
    path = tmp_path / "unreachable.json"
    path.write_text(inst.model_dump_json(exclude_unset=True))
    return path


def test_an_infeasible_instance_exits_3_naming_the_conflict(tmp_path, run_cli):
    result = run_cli("solve", infeasible_file(tmp_path))
    assert result.exit_code == 3
    assert "infeasible" in result.stderr
    assert "demand[lose=east,chat,east]" in result.stderr
    assert "nearest: west at 150 ms" in result.stderr
    assert "remedy:" in result.stderr and "Traceback" not in result.stderr


def test_no_plan_in_time_exits_4(run_cli, monkeypatch):
    def out_of_time(program, backend, settings, bounds=None, parts=None):
        return Optimised(SolveResult(Termination.TIME_LIMIT, "highs", "test", 60.0))

    monkeypatch.setattr("solver.solve.optimise", out_of_time)
    result = run_cli("solve", ONE_MODEL_ONE_REGION, "--time-limit", "60")
    assert result.exit_code == 4
    assert "no plan" in result.stderr and "--time-limit" in result.stderr


def test_an_unknown_backend_is_bad_input(run_cli):
    result = run_cli("solve", DEFAULT_INSTANCE, "--backend", "gurobi")
    assert result.exit_code == 2
    assert "unknown solver backend 'gurobi'" in result.stderr
    assert "highs" in result.stderr


def test_a_long_utilisation_table_keeps_its_most_utilised_rows_in_order(
    default_plan_json, monkeypatch
):
    """With room for 5 rows, the table keeps the 5 (scenario, pool) rows of highest
    utilisation, in the plan's scenario order, and its note counts the rest."""
    import cli.render.plan_tables as plan_tables

    plan = Plan.model_validate_json(default_plan_json)
    every = [(s.name, p) for s in plan.scenarios for p in s.pools]
    assert len(every) > 5

    def table():
        return next(
            t for t in plan_tables.plan_tables(plan) if t.title == "Utilisation by scenario"
        )

    assert len(table().rows) == len(every) and table().note == ""  # under the limit: all
    monkeypatch.setattr(plan_tables, "UTILISATION_ROWS_SHOWN", 5)
    shown = table()
    threshold = sorted((p.utilisation for _, p in every), reverse=True)[4]
    # every row above the 5th utilisation, then rows tied with it in scenario order until
    # 5 (the plan's order breaks ties: a row above the threshold that comes after a tied
    # one is still kept, so `>= threshold` then the first 5 is wrong where ties straddle)
    above = [i for i, (_, p) in enumerate(every) if p.utilisation > threshold]
    tied = [i for i, (_, p) in enumerate(every) if p.utilisation == threshold]
    expected = [every[i] for i in sorted(above + tied[: 5 - len(above)])]
    assert [(row[0], row[1], row[2], row[3]) for row in shown.rows] == [
        (n, p.workload, p.region, p.phase) for n, p in expected
    ]
    assert shown.note.startswith(f"the 5 most utilised of {len(every)} rows; the other ")
    assert f"{len(every) - 5} (at most {threshold:.0%}) in --json" in shown.note


def test_a_one_gpu_plan_says_gpus_bought_and_used(run_cli):
    """The one-model fixture's plan runs one H100 in the one 8-GPU server it buys:
    8 x $2.40/hour x 730 hours = $14,016/month; the header says both counts."""
    from tests.paths import ONE_MODEL_ONE_REGION

    lines = run_cli("solve", ONE_MODEL_ONE_REGION).stdout.splitlines()
    assert lines[0].endswith("$14,016/month, 8 GPUs bought, 1 used")
    # the solver line's count of candidates agrees with its noun (it read "1 candidate
    # configurations" on this fixture)
    solver = next(line for line in lines if line.startswith("solver: "))
    count, noun = solver.rsplit(", ", 1)[1].split(" ", 1)
    assert noun == ("candidate configuration" if count == "1" else "candidate configurations")
