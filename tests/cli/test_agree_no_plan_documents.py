"""The commands that read a plan say what a document `solve --json` wrote without one
holds. Before: verify, report and deploy listed `termination: Extra inputs are not
permitted` (three times), and simulate called the file `not a plan written by fleetplan
solve --json` although solve had written it."""

import json

import pytest

from tests.paths import INSTANCES

SMALL = INSTANCES / "region-loss-3.yaml"


@pytest.fixture(scope="module")
def no_plan(tmp_path_factory):
    """What `solve --time-limit 0.001 --json FILE` writes (test_no_solution_json), and an
    infeasible run's document, as files."""
    folder = tmp_path_factory.mktemp("no-plan")
    stopped = folder / "stopped.json"
    stopped.write_text(
        json.dumps(
            {
                "instance": "region-loss-3",
                "status": "no_solution",
                "termination": "time_limit",
                "stage": "candidates",
                "message": "time limit of 0.001 s reached in candidates after 0.0 s",
            }
        )
    )
    infeasible = folder / "infeasible.json"
    infeasible.write_text(
        json.dumps({"instance": "region-loss-3", "status": "infeasible", "diagnosis": {}})
    )
    return stopped, infeasible


@pytest.mark.parametrize(
    "command",
    [
        ("verify", SMALL, "{plan}"),
        ("simulate", SMALL, "{plan}"),
        ("report", SMALL, "--plan", "{plan}", "-o", "{out}"),
    ],
)
def test_a_document_without_a_plan_is_named_as_such(run_cli, no_plan, tmp_path, command):
    stopped, infeasible = no_plan
    for document, why in (
        (stopped, "stopped without one (time limit of 0.001 s reached in candidates"),
        (infeasible, "found the instance infeasible"),
    ):
        args = [str(a).format(plan=document, out=tmp_path / "r.html") for a in command]
        result = run_cli(*args)
        assert result.exit_code == 2, result.stderr
        assert f"records no plan: `fleetplan solve` {why}" in result.stderr
        assert "Extra inputs" not in result.stderr
