"""Hostile input, round eight: a sweep grid that would lose one of its own changes. Each
point was solved at the later value and labelled with both; now the grid is refused
before any point, naming the lost change and the one that replaces it."""

import shutil

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

TTFT = "workloads[0].slo.ttft_p99_ms"


def _grid(tmp_path, text: str):
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "inst.yaml")
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: inst.yaml\n{text}")
    return grid


@pytest.mark.parametrize(
    ("text", "lost", "by", "where"),
    [
        # one field spelled by name and by position: point 1 said 200 ms and planned 900
        (
            f"axes:\n  workloads[chat].slo.ttft_p99_ms: [800, 200]\n  {TTFT}: [900]\n",
            "axes.workloads[chat].slo.ttft_p99_ms",
            f"axes.{TTFT}",
            f"both land on {TTFT}",
        ),
        # a fixed change an axis sets again: the set value never planned
        (
            f"set:\n  workloads[chat].slo.ttft_p99_ms: 100\naxes:\n  {TTFT}: [900, 1000]\n",
            "set.workloads[chat].slo.ttft_p99_ms",
            f"axes.{TTFT}",
            f"both land on {TTFT}",
        ),
        # a field, then the section holding it
        (
            f"axes:\n  {TTFT}: [900, 1000]\n  workloads[chat].slo: [{{ttft_p99_ms: 700}}]\n",
            f"axes.{TTFT}",
            "axes.workloads[chat].slo",
            f"workloads[0].slo holds {TTFT}",
        ),
    ],
    ids=["two-spellings", "set-then-axis", "field-then-section"],
)
def test_a_change_a_later_one_replaces_is_refused_naming_both(
    run_cli, tmp_path, text, lost, by, where
):
    needles = (f"{lost}: is replaced at every point by {by} ({where})",)
    result = run_checked(run_cli, "sweep", _grid(tmp_path, text), needles=needles)
    assert "points" not in result.stderr  # refused before any point


def test_a_value_an_axis_gives_twice_is_refused(run_cli, tmp_path):
    needles = (f"axes.{TTFT}[2]: 900 is given twice",)
    run_checked(
        run_cli, "sweep", _grid(tmp_path, f"axes:\n  {TTFT}: [900, 1000, 900]\n"), needles=needles
    )


def test_a_section_then_a_field_within_it_refines_it(run_cli, tmp_path):
    # set replaces the SLO, the axis varies one of its fields: nothing is lost
    text = (
        "set:\n  workloads[chat].slo: {ttft_p99_ms: 700, tpot_p99_ms: 60}\n"
        f"axes:\n  {TTFT}: [900, 1000]\n"
    )
    result = run_checked(run_cli, "sweep", _grid(tmp_path, text), code=0)
    assert "2 points" in result.stderr


@pytest.mark.parametrize(
    ("first", "then", "where"),
    [
        ("name=x", "name=y", "both land on name"),
        (f"{TTFT}=900", "workloads[chat].slo.ttft_p99_ms=700", f"both land on {TTFT}"),
        (f"{TTFT}=900", "workloads[chat].slo={ttft_p99_ms: 700}", f"workloads[0].slo holds {TTFT}"),
    ],
)
def test_a_set_a_later_set_replaces_is_refused_naming_both(run_cli, first, then, where):
    # before: the later one won without a word (validate said ok with the second value)
    needles = (f"--set: {first}: is replaced by --set {then} ({where})",)
    run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", first, "--set", then, needles=needles
    )


def test_a_set_within_an_earlier_one_refines_it(run_cli):
    section = "workloads[chat].slo={ttft_p99_ms: 700, tpot_p99_ms: 60}"
    run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", section, "--set", f"{TTFT}=900", code=0
    )


def test_a_grid_whose_instance_is_a_link_that_loops_is_bad_input(run_cli, tmp_path):
    # before: RuntimeError from Path.resolve, 'internal error', exit 70
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: a.yaml\naxes:\n  {TTFT}: [900]\n")
    needles = (f"instance: {tmp_path / 'a.yaml'}: cannot be read",)
    run_checked(run_cli, "sweep", grid, needles=needles)


@pytest.mark.parametrize(
    ("values", "twice"),
    [
        ("[900, 900.0]", "900.0 is given twice: each point once (900 at [0] reads the same)"),
        # an unquoted 1e3 is the number 1000.0 (round 16; YAML 1.1 read the text "1e3")
        ("[1000, 1e3]", "1000.0 is given twice: each point once (1000 at [0] reads the same)"),
        ("[{ttft_p99_ms: 900}, {ttft_p99_ms: 9e2}]", '{"ttft_p99_ms": 900.0} is given twice'),
    ],
    ids=["int-then-float", "exponent", "inside-a-section"],
)
def test_a_number_an_axis_gives_twice_in_two_spellings_is_refused(run_cli, tmp_path, values, twice):
    """900 and 900.0 (or 1e3 and 1000) are one number to the instance: the same point was
    solved twice under two labels (hostile10)."""
    axis = "workloads[chat].slo" if "{" in values else TTFT
    needles = (f"axes.{axis}[1]: {twice}",)
    result = run_checked(
        run_cli, "sweep", _grid(tmp_path, f"axes:\n  {axis}: {values}\n"), needles=needles
    )
    assert "points" not in result.stderr  # refused before any point
