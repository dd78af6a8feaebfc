"""Worker processes end with the command that started them (issue 36, solver.workers):
SIGTERM or SIGKILL to a `solve` whose candidates are evaluated in workers, or SIGKILL to
a `sweep` on a local pool, leaves no process of theirs behind.

The `solve` runs in a fresh interpreter through the real entry point (`cli.app.main`),
told that the cores are idle and that two workloads are worth workers (the limits the
parallel tests lower too), and held, once its workers are up, in this process before it
merges their tables: the workers are alive and idle, kept for the workload solves, when
the signal comes. The `sweep` is killed once both of its workers run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solver.settings import machine_threads
from tests.paths import ONE_MODEL_ONE_REGION, REPO
from tests.synthetic import instance_data, workload

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="reads the process table in /proc"),
    pytest.mark.skipif(machine_threads() < 2, reason="needs two cores for two workers"),
]

GONE_WITHIN_S = 5.0
"""How long the workers may outlive the command (the watchdog looks every 0.2 s)."""

HELD_SOLVE = """
import sys, time
import solver.candidates.workers as candidates
import solver.decompose.parallel as parallel
parallel.idle_cores = lambda: 2.0
candidates.PARALLEL_MIN_CONFIGURATIONS = 0
def held(*tables):
    print("workers up", file=sys.stderr, flush=True)
    time.sleep(60)
candidates._merged = held
from cli.app import main
sys.argv = ["fleetplan", "solve", sys.argv[1]]
main()
"""


def _children_of(pid: int) -> set[int]:
    """Every live descendant of `pid` (a zombie is not alive)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _workers_left_after(command: list[str], ready, number: signal.Signals) -> set[int]:
    """Start `command`, wait until `ready(process, workers)`, send `number`, and return
    the workers still alive `GONE_WITHIN_S` later (killed here afterwards, whatever the
    verdict, so that no test leaves processes behind)."""
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while not ready(process, workers):
            assert process.poll() is None, process.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
            workers |= _children_of(process.pid)
        workers |= _children_of(process.pid)
        process.send_signal(number)
        assert process.wait(timeout=10) == -number
        end = time.monotonic() + GONE_WITHIN_S
        while _alive(workers) and time.monotonic() < end:
            time.sleep(0.1)
        return _alive(workers)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in _alive(workers):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_no_worker_outlives_a_killed_solve(tmp_path, number):
    data = instance_data(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.1)}},
        [  # two cache groups (the prompts differ): two workers
            workload("chat", {"east": 80.0, "west": 30.0}),
            workload("code", {"west": 50.0}, prompt_tokens=3000),
        ],
    )
    source = tmp_path / "two.json"
    source.write_text(json.dumps(data), encoding="utf-8")

    def ready(process, workers):
        return process.stderr.readline().strip() == "workers up"  # blocks until held

    command = [sys.executable, "-c", HELD_SOLVE, str(source)]
    assert _workers_left_after(command, ready, number) == set()


def test_no_worker_outlives_a_killed_sweep(tmp_path):
    grid = tmp_path / "grid.yaml"
    demands = [10 + point for point in range(40)]  # far more than the workers finish
    grid.write_text(
        f"instance: {ONE_MODEL_ONE_REGION}\n"
        f"axes:\n  workloads[chat].demand.us-east.peak_requests_per_s: {demands}\n",
        encoding="utf-8",
    )
    command = [
        sys.executable,
        "-c",
        "import sys\nfrom cli.app import main\nsys.argv[0] = 'fleetplan'\nmain()",
        *["sweep", str(grid), "--jobs", "2", "--json", str(tmp_path / "out.json")],
    ]

    def ready(process, workers):
        return len(workers) >= 2

    assert _workers_left_after(command, ready, signal.SIGKILL) == set()
