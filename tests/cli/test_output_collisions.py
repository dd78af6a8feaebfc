"""Two outputs of one command in one file (`solve --json out --markdown out`): the second
write replaced the first and both said "wrote"; `sweep --out lines --json lines` replaced
the resume file with the summary. Each is now refused before any work, exit 2, naming
the path, and nothing is written."""

import os

import pytest

from tests.cli.test_sweep import _grid
from tests.paths import ONE_MODEL_ONE_REGION


@pytest.mark.parametrize(
    ("command", "first", "second"),
    [
        ("solve", "--json", "--markdown"),
        ("explain", "--json", "--markdown"),
        ("solve", "--json", "--export-mps"),
    ],
)
def test_two_outputs_in_one_file_exit_2_before_any_work(run_cli, tmp_path, command, first, second):
    out = tmp_path / "out.mps"
    result = run_cli(command, ONE_MODEL_ONE_REGION, first, out, second, out)
    assert result.exit_code == 2, result.stderr
    assert f"{out}: is also the output {out}; give each output its own file" in result.stderr
    assert not out.exists()


def test_a_hard_link_to_another_output_is_the_same_file(run_cli, tmp_path):
    markdown = tmp_path / "plan.md"
    markdown.write_text("# old\n\n| a |\n|---|\n| 1 |\n")  # an earlier Markdown report
    alias = tmp_path / "plan.json"
    os.link(markdown, alias)
    result = run_cli("solve", ONE_MODEL_ONE_REGION, "--markdown", markdown, "--json", alias)
    assert result.exit_code == 2, result.stderr
    assert "give each output its own file" in result.stderr
    assert markdown.read_text() == "# old\n\n| a |\n|---|\n| 1 |\n"


def test_a_sweep_summary_never_replaces_its_resume_file(run_cli, tmp_path):
    lines = tmp_path / "points.jsonl"
    lines.write_text("")
    result = run_cli("sweep", _grid(tmp_path), "--out", lines, "--json", lines)
    assert result.exit_code == 2, result.stderr
    assert "give each output its own file" in result.stderr
    assert lines.read_text() == ""


def test_distinct_outputs_and_standard_output_are_still_written(run_cli, tmp_path):
    markdown = tmp_path / "plan.md"
    result = run_cli("solve", ONE_MODEL_ONE_REGION, "--json", "-", "--markdown", markdown)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.lstrip().startswith("{") and markdown.read_text().startswith("# ")
