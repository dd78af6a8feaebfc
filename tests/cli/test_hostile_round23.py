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


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "null"), (True, "true"), (False, "false"), ({"a": None}, '{"a": null}'),
     ([1, True], "[1, true]"), (20, "20"), (2.5, "2.5"), ("us-east", "us-east")],
)  # fmt: skip
def test_a_sweep_axis_value_is_shown_as_the_grid_spells_it(value, shown):
    """A null axis value was shown `None` in the cost surface and the point's message,
    a boolean `True`: Python's words for what the grid wrote."""
    from models.schema.sweep_grid import shown_value

    assert shown_value(value) == shown


def test_a_grid_of_a_null_point_names_it_null(run_cli, tmp_path):
    """Every point bad (the demand null): exit 2, the point named as the grid wrote it."""
    grid = tmp_path / "grid.yaml"
    demand = "workloads[chat].demand.us-east.peak_requests_per_s"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  {demand}: [null]\n")
    result = run_checked(
        run_cli, "sweep", grid, needles=(f"no point is a valid instance; {demand}=null:",)
    )
    assert "None" not in result.stderr
