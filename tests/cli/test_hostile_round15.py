"""Hostile input, round fifteen: a reader that closes the pipe early, plans of different
horizons compared, a power cap a long horizon outgrows, a thread count above the
machine's and digit separators in command-line numbers. Each case was an exit 1 with no
message, a comparison that did not say what it compared, a 9 s solve, a refusal of a
valid instance or a number read that files refuse."""

import os
import subprocess
import sys

import pytest

from models.schema import limits
from tests.paths import ONE_MODEL_ONE_REGION, REPO

# --- a reader that stops early (`| head -1`) ---------------------------------------------


def _into_closed_pipe(*argv: str, stderr_too: bool = False) -> subprocess.CompletedProcess:
    """Run the command line with its stdout (and, `stderr_too`, its stderr: `2>&1 | head
    -1`) a pipe whose reader has already gone, as `fleetplan ... | head -1` leaves it once
    head has its line."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from cli.app import main; main()", *map(str, argv)],
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            text=True,
            check=False,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "argv",
    [
        ("catalog", "gpus"),
        ("catalog", "gpus", "--json"),
        ("estimate", "--help"),
    ],
    ids=["rich table", "json", "typer's help"],
)
def test_a_closed_pipe_ends_quietly(argv):
    """`solve ... | head -1` exited 1 with nothing said (rich's broken-pipe handler), and
    JSON written to a closed pipe was an 'internal error'. A Unix tool whose reader has
    gone ends as if killed by SIGPIPE: 128 + 13 = 141, nothing on stderr."""
    result = _into_closed_pipe(*argv)
    assert result.returncode == 128 + 13, (result.returncode, result.stderr)
    assert result.stderr == ""


def test_output_to_dev_null_is_no_closed_pipe():
    """/dev/null from the start is a reader that takes everything: exit 0."""
    with open(os.devnull, "w") as devnull:
        result = subprocess.run(
            [sys.executable, "-c", "from cli.app import main; main()", "catalog", "gpus"],
            stdout=devnull,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert (result.returncode, result.stderr) == (0, "")


# --- solver threads above the machine's CPU count ----------------------------------------


def test_threads_flag_beyond_the_cpu_count_is_capped_with_a_warning(run_cli, monkeypatch):
    """`--threads 3` on a 2-CPU machine was refused ('must be between 1 and 2'): it now
    solves on min(3, 2) = 2 threads and says so, naming the flag."""
    monkeypatch.setattr(limits, "max_threads", lambda: 2)
    result = run_cli("solve", ONE_MODEL_ONE_REGION, "--threads", "3")
    assert result.exit_code == 0, result.stderr
    assert "--threads: 3 is more than this machine's 2 CPUs; the solver runs 2" in result.stderr


# --- digit separators in command-line numbers ---------------------------------------------


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("estimate", "--requests-per-day", "1_000_000"), "1_000_000"),
        (("estimate", "--peak-to-average", "\u0664"), "\u0664"),  # Arabic-Indic four
        (("batch", "{tmp}", "--jobs", "1_6"), "1_6"),
    ],
    ids=["float separator", "float other script", "int separator"],
)
def test_command_line_numbers_refuse_what_files_refuse(run_cli, tmp_path, args, text):
    """`estimate --requests-per-day 1_000_000` planned for 10^6 requests a day (click reads
    numbers with Python's float, PEP 515 separators and all) where an instance or a CSV
    refuses 1_000_000 (models.io.numbers): the flag is now read by the same rule."""
    result = run_cli(*(arg.format(tmp=tmp_path) for arg in args))
    flag = args[-2]
    assert result.exit_code == 2, result.stdout
    assert f"{flag}: must be a number, got the text {text!r}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_command_line_decimals_still_read(run_cli):
    """1e6 and 1000000.0 are decimals as float writes them: both read 10^6 requests a day,
    the same numbers as 1000000 (estimate's output depends only on the value)."""
    plain = run_cli("estimate", "--requests-per-day", "1000000")
    for written in ("1e6", "1000000.0", " 1000000 "):
        result = run_cli("estimate", "--requests-per-day", written)
        assert (result.exit_code, result.stdout) == (0, plain.stdout), written
