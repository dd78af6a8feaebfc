"""The README's figures against the tool: every marker's figures are what its check's
command gives now (tests/readme/__init__.py says how the markers read). Slow checks are
left to `make readme`.

One test checks every marker, so that under pytest-xdist the commands that several
markers quote (the default instance's solve) run once, in one worker.
"""

import pytest

import cli.levers
from solver.analysis.levers import LeverRun
from tests.readme.checks import CHECKS
from tests.readme.markers import find_markers, rewrite, shown_in_section, token_pattern
from tests.readme.runner import Runner
from tests.readme.verdicts import README, problems, unused_checks
from tests.solved_once import solving_default_once

TEXT = README.read_text()
MARKERS = find_markers(TEXT)


class _LeversInThisProcess(LeverRun):
    """`explain --levers`'s lever run (cli.levers.RunningLevers) with jobs=1: the levers
    re-solved one after the other in this process, not in a pool of worker processes."""

    def __init__(self, instance, base, backend=None, jobs=1, **given):
        super().__init__(instance, base, backend, 1, **given)


@pytest.fixture
def levers_in_this_process(monkeypatch):
    """The levers check's `explain instances/region-loss-3.yaml --levers` with its levers
    re-solved in this process: its two workers' start-up was ~2.7 s of the command's 8.6 s
    of CPU, and the levers are the same (each proven, the same table: compared once at
    455b948b); LeverRun's pool is tested in tests/solver/analysis/test_levers.py."""
    monkeypatch.setattr(cli.levers, "LeverRun", _LeversInThisProcess)


def test_figures_are_the_tools(default_solved, no_engine_effects, levers_in_this_process):
    """The demo's solve of the default instance is the session's (tests.solved_once: the
    same call, made once a run); every other command runs as typed, but for explain's
    engine-effects replay (conftest.no_engine_effects): the one explain here, the levers
    check's, reads the levers, the cost and the GPUs, none of the replay's figures, and
    the replay was ~80% of that command's CPU (five runs of 120 s of arrivals a pool;
    tests/solver/analysis/test_engine_effects.py tests it); and its levers run in this
    process (`levers_in_this_process`)."""
    run = Runner()
    with solving_default_once(default_solved):
        found = [
            problem
            for marker in MARKERS
            if marker.name not in CHECKS or not CHECKS[marker.name].slow
            for problem in problems(TEXT, marker, run)
        ]
    assert found == [], "README figures out of date; run `make readme`:\n" + "\n".join(found)


def test_every_check_is_quoted():
    assert unused_checks(TEXT) == []


def test_there_are_markers():
    """A README that lost its markers would pass every check vacuously."""
    assert len(MARKERS) >= len(CHECKS) >= 10


# --- the marker machinery itself, on small texts -----------------------------------------------


def test_a_token_is_not_part_of_a_longer_number():
    assert token_pattern("24").search("24 GPUs")
    assert not token_pattern("24").search("124 GPUs")
    assert not token_pattern("24").search("2,466,24")
    assert not token_pattern("2.4").search("2.45 ms")
    assert not token_pattern("$4,380").search("$14,380")
    assert token_pattern("$4,380").search("saves $4,380.")


def test_rewrite_sets_the_marker_and_the_figure_in_its_paragraph():
    text = "# A\n<!-- check x: gpus=48 GPUs; cost=$1 -->\nwe need 48 GPUs at $1.\n\n48 GPUs here"
    (marker,) = find_markers(text)
    new, left = rewrite(text, marker, {"gpus": "24 GPUs", "cost": "$1"})
    assert left == []
    assert new == (
        "# A\n<!-- check x: gpus=24 GPUs; cost=$1 -->\nwe need 24 GPUs at $1.\n\n48 GPUs here"
    )


def test_rewrite_names_a_figure_the_paragraph_does_not_quote():
    text = "<!-- check x: rate=58 -->\ncarries 57 requests/s"
    (marker,) = find_markers(text)
    _, left = rewrite(text, marker, {"rate": "49"})
    assert left == ["x: rate: '58' is not in the text to replace"]


def test_rewrite_replaces_an_output_block():
    text = "<!-- output y -->\n```\nold\nlines\n```\nafter"
    (marker,) = find_markers(text)
    new, _ = rewrite(text, marker, "new")
    assert new == "<!-- output y -->\n```\nnew\n```\nafter"


def test_a_figure_the_tool_no_longer_gives_is_named():
    marker_line = "<!-- check server-power: h100_server_kw=99.9 kW -->"
    text = f"# S\n`fleetplan catalog gpus`\n{marker_line}\nat 99.9 kW"
    (marker,) = find_markers(text)
    (found,) = problems(text, marker, Runner())
    assert found.startswith("README line 3 (server-power): h100_server_kw reads '99.9 kW'")


def test_a_figure_without_its_command_in_the_section_is_named():
    now = CHECKS["server-power"].compute(Runner())["h100_server_kw"]
    marker_line = f"<!-- check server-power: h100_server_kw={now} -->"
    text = f"# S\n{marker_line}\nat {now}\n# T\nfleetplan catalog gpus"
    (marker,) = find_markers(text)
    assert problems(text, marker, Runner()) == [
        "README line 2 (server-power): the section does not show the command "
        "'fleetplan catalog gpus'"
    ]


def test_a_comment_in_a_fenced_block_is_not_a_heading():
    """A `#` line inside a fence (a shell comment) does not end the section: the marker
    below the block still sees the command shown above it, in the same section."""
    text = "# S\n```sh\nfleetplan deploy plan.json\n#   kubectl apply -f k8s/\n```\n"
    text += "<!-- check x: a=1 -->\nafter 1\n# T\nnext"
    (marker,) = find_markers(text)
    assert marker.section == (0, 7)  # from '# S' to the line before '# T'
    assert shown_in_section(text, marker, "fleetplan deploy plan.json")
