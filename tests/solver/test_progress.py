"""Progress on long work (issue 32): past `QUIET_S` a run reports its stages and the MIP's
incumbent, bound and gap on the `fleetplan.progress` logger, which the CLI sends to
stderr: `--json -` on stdout stays pure JSON."""

import json
import logging
import re
import time
from types import SimpleNamespace

import solver.progress as progress
from solver.candidates import list_sizes
from tests.paths import INSTANCES


def _data(incumbent, bound, gap):
    return SimpleNamespace(mip_primal_bound=incumbent, mip_dual_bound=bound, mip_gap=gap)


def test_the_incumbent_is_reported_past_the_quiet_time_at_most_once_a_second(caplog):
    caplog.set_level(logging.INFO, logger="fleetplan.progress")
    progress.forget_held()  # a note an earlier short run in this worker held, never told
    now = time.monotonic()
    early = progress.IncumbentReporter(run_start=now)  # 0 s into the run: quiet
    early(0, "", _data(100.0, 90.0, 0.1), None, None)
    assert caplog.records == []
    late = progress.IncumbentReporter(run_start=now - 3.0, offset=1000.0)  # 3 s in
    late(0, "", _data(1e31, -1e31, 1.0), None, None)  # no incumbent yet: nothing
    late(0, "", _data(67_434.0, 64_000.0, 0.0509), None, None)
    late(0, "", _data(67_000.0, 64_000.0, 0.0448), None, None)  # within EVERY_S: dropped
    (record,) = caplog.records
    # the objective's constant is added to both sides: 67,434 + 1,000, 64,000 + 1,000
    assert "incumbent 68,434, bound 65,000, gap 5.09%" in record.getMessage()


def test_stages_are_quiet_before_two_seconds_then_said_once(caplog):
    caplog.set_level(logging.INFO, logger="fleetplan.progress")
    progress.forget_held()
    stages = progress.StageReporter()
    stages.passed("candidates", progress.QUIET_S / 2)
    stages.passed("program build", progress.QUIET_S + 0.1)
    stages.passed("program build", progress.QUIET_S + 0.2)  # same stage within EVERY_S
    stages.passed("solve", progress.QUIET_S + 0.3)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"progress: run at {progress.QUIET_S + 0.1:.1f} s: program build done",
        f"progress: run at {progress.QUIET_S + 0.3:.1f} s: solve done",
    ]


def test_a_check_inside_a_stage_says_in_and_only_its_end_says_done(caplog):
    """The candidate table checks the deadline per configuration: each such check is a
    heartbeat (`in candidates`, at most once per EVERY_S), never `candidates done`; the
    stage's end says done even 0.1 s after a heartbeat (another kind of line)."""
    caplog.set_level(logging.INFO, logger="fleetplan.progress")
    progress.forget_held()
    stages = progress.StageReporter()
    start = progress.QUIET_S + 0.1
    for tick in (0.0, 0.3, 0.6, 1.2):  # four configurations: 1.2 - 0.0 >= EVERY_S
        stages.passed("candidates", start + tick, within=True)
    stages.passed("candidates", start + 1.3)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"progress: run at {start:.1f} s: in candidates",
        f"progress: run at {start + 1.2:.1f} s: in candidates",
        f"progress: run at {start + 1.3:.1f} s: candidates done",
    ]


def test_a_long_table_says_candidates_done_once(run_cli, monkeypatch):
    """A whole run with every check reported (QUIET_S 0, EVERY_S 0): the table's
    per-configuration checks are `in candidates`, its end one `candidates done`."""
    monkeypatch.setattr(progress, "QUIET_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    result = run_cli("solve", INSTANCES / "region-loss-3.yaml", "--json", "-")
    assert result.exit_code == 0
    assert result.stderr.count("candidates done") == 1
    assert result.stderr.count("program build done") == 1
    assert "in candidates" in result.stderr and "in program build" in result.stderr


def test_progress_goes_to_stderr_never_into_json_on_stdout(run_cli, monkeypatch):
    monkeypatch.setattr(progress, "QUIET_S", 0.0)  # every run is a long one here
    result = run_cli("solve", INSTANCES / "region-loss-3.yaml", "--json", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["status"] == "optimal"
    assert "progress: run at" in result.stderr and "progress" not in result.stdout


def test_a_held_note_is_told_once_before_the_first_message_and_forgotten_by_a_new_run(caplog):
    caplog.set_level(logging.INFO, logger="fleetplan.progress")
    progress.forget_held()
    progress.hold("policy.tensor_parallel adds 3 of 4 candidates")
    stages = progress.StageReporter()
    stages.passed("candidates", progress.QUIET_S / 2)  # quiet: the note waits
    assert caplog.records == []
    stages.passed("program build", progress.QUIET_S + 0.1)
    progress.hold("policy.tensor_parallel adds 3 of 4 candidates")  # a month's candidates
    stages.passed("solve", progress.QUIET_S + 1.5)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "progress: policy.tensor_parallel adds 3 of 4 candidates",
        f"progress: run at {progress.QUIET_S + 0.1:.1f} s: program build done",
        f"progress: run at {progress.QUIET_S + 1.5:.1f} s: solve done",
    ]
    caplog.clear()
    progress.hold("a short run's note")
    progress.forget_held()  # the next run starts: the short run's note is never told
    late = progress.IncumbentReporter(run_start=time.monotonic() - 3.0)
    late(0, "", _data(100.0, 90.0, 0.1), None, None)
    assert [r.getMessage() for r in caplog.records] == [
        "progress: MIP solve at 3.0 s: incumbent 100, bound 90, gap 10.00%"
    ]


def test_a_long_run_names_the_list_that_dominates_its_size(run_cli, monkeypatch):
    """seed-chat-sizing offers one GPU type, one precision and one PP size, and TP 1, 2,
    4 and 8: the TP list is the only one with two entries or more among the kept
    candidates, so it is the one named, once, and its entries add up to the table."""
    monkeypatch.setattr(progress, "QUIET_S", 0.0)
    result = run_cli("solve", INSTANCES / "seed-chat-sizing.yaml", "--json", "-")
    assert result.exit_code == 0
    (told,) = [line for line in result.stderr.splitlines() if " candidates (" in line]
    match = re.match(
        r"progress: policy.tensor_parallel adds (\d+) of (\d+) candidates \((.*)\);", told
    )
    assert match, told
    adds, total = int(match[1]), int(match[2])
    counts = [int(entry.split(": ")[1]) for entry in match[3].split(", ")]
    assert sum(counts) == total and adds == total - max(counts)
    assert adds >= list_sizes.DOMINANT_SHARE * total
