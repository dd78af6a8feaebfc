"""What the tables say, read as a newcomer reads them: effects named in words, not as
the JSON's keys."""

import json

from tests.paths import ONE_MODEL_ONE_REGION


def test_engine_effects_are_named_in_words_in_the_table_and_by_key_in_json(run_cli, tmp_path):
    report = tmp_path / "explain.json"
    result = run_cli("explain", ONE_MODEL_ONE_REGION, "--markdown", "-", "--json", report)
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "| all on |" in line)
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    assert cells[5:9] == ["batching", "preemption", "prefill interference", "head-of-line blocking"]
    assert "hol_blocking" not in result.stdout
    effects = json.loads(report.read_text())["engine_effects"]
    assert effects and set(effects[0]["off_p99_ms"]) == {
        "batching", "preemption", "interference", "hol_blocking"
    }  # fmt: skip


def test_one_scenario_and_one_replica_read_in_the_singular(run_cli, tmp_path):
    """The one-region fixture has one scenario (survive: none) and one replica of one H100:
    it read '1 scenario checks' and '1 replicas of 1 x h100-sxm'."""
    plan = tmp_path / "plan.json"
    assert run_cli("solve", ONE_MODEL_ONE_REGION, "--json", plan).exit_code == 0
    replicas = json.loads(plan.read_text())["replicas"]
    assert [pool["count"] for pool in replicas] == [1]
    checked = run_cli("verify", ONE_MODEL_ONE_REGION, plan)
    assert checked.exit_code == 0 and checked.stdout.rstrip().endswith(", 1 scenario check")
    out = tmp_path / "deploy"
    wrote = run_cli(
        "deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm", "--out", out
    )
    assert wrote.exit_code == 0, wrote.stderr
    (script,) = out.glob("*.sh")
    assert (
        ": 1 replica of 1 x h100-sxm in us-east (1 normal, 0 failover spare)" in script.read_text()
    )


def test_an_infeasible_instance_says_infeasible_once(run_cli):
    """It read 'infeasible: FILE: infeasible: 1 requirement cannot be met'."""
    result = run_cli("solve", ONE_MODEL_ONE_REGION, "--set", "regions[0].supply={}")
    assert result.exit_code == 3
    first = result.stderr.splitlines()[0]
    assert first == f"infeasible: {ONE_MODEL_ONE_REGION}: 1 requirement cannot be met"


def test_the_program_size_reads_with_thousands_separators(run_cli, tmp_path):
    """diurnal-chat-batch's header read '1487 variables (655 integer), 1602 constraints'
    beside '$26,163/month': every count in a header carries its separators."""
    from cli.render.plan_tables import plan_header
    from solver.plan.schema import Plan

    path = tmp_path / "plan.json"
    assert run_cli("solve", ONE_MODEL_ONE_REGION, "--json", path).exit_code == 0
    plan = Plan.model_validate_json(path.read_text())
    sized = plan.model_copy(
        update={
            "solver": plan.solver.model_copy(
                update={"variables": 1487, "integer_variables": 655, "constraints": 1602}
            )
        }
    )
    (line,) = [line for line in plan_header(sized) if line.startswith("solver: ")]
    assert "program: 1,487 variables (655 integer), 1,602 constraints, " in line
