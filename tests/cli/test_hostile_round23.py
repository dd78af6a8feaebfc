"""Hostile input, round twenty-three: the cases the input fuzz (tests/bench/fuzz_run.py)
found. `deploy -o` under a file (`notes.txt/out`) ended in an internal error
(NotADirectoryError, exit 70) after the plan was verified; it is refused before any work,
naming the file in the way."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


@pytest.fixture(scope="module")
def one_region_plan(tmp_path_factory):
    """The one-region instance's plan as solve writes it."""
    from models.io.loading import load_instance
    from solver.solve import solve

    path = tmp_path_factory.mktemp("plan") / "plan.json"
    plan = solve(load_instance(ONE_MODEL_ONE_REGION))
    path.write_text(json.dumps(json.loads(plan.model_dump_json())))
    return path


@pytest.mark.parametrize("below", ["out", "a/b/c"], ids=["child", "grandchild"])
def test_deploy_into_a_folder_under_a_file_is_refused_naming_the_file(
    run_cli, tmp_path, one_region_plan, below
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the user's own notes\n")
    out = notes / below
    args = ("deploy", one_region_plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm")
    needle = f"{out}: -o: cannot be made: {notes} is a file, not a folder"
    run_checked(run_cli, *args, "-o", out, needles=(needle,))
    assert notes.read_text() == "the user's own notes\n"
