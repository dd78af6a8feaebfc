"""Start-up and single-question wall times of the `fleetplan` command (issue 19).

Run by `make bench` only. Each command runs as a fresh process, several times in turn; the
table gives the median and the fastest run, side by side in one run of the benchmark, and
the import breakdown (`python -X importtime`) of the slowest command: the ten modules with
the largest cumulative import time. Beside the wall time it gives the CPU seconds (user +
system) the child process used: on a machine shared with other jobs that column moves far
less than the wall time, so it is the one to compare between runs.

Targets on a quiet machine: `fleetplan --help` and `fleetplan catalog gpus` under 0.2 s;
a one-model, one-region solve under 0.3 s. A loaded machine (CI, other jobs) is slower;
the ratios between the rows hold.
"""

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.paths import ONE_MODEL_ONE_REGION

REPO = Path(__file__).resolve().parents[2]
RUNS = 5


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", "from cli.app import main; main()", *args]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall_and_cpu_s(argv: list[str]) -> tuple[float, float]:
    cpu_before = _children_cpu_s()
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-2000:]
    return wall, _children_cpu_s() - cpu_before


def _import_times(argv: list[str]) -> list[tuple[str, float, float, int]]:
    """(module, own seconds, cumulative seconds, nesting depth) of every import the
    command makes, from `python -X importtime`."""
    result = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], cwd=REPO, capture_output=True, text=True
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        own, cumulative, name = line[len("import time:") :].split("|")
        try:
            own_us, cumulative_us = int(own), int(cumulative)
        except ValueError:  # the header line
            continue
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append((name.strip(), own_us / 1e6, cumulative_us / 1e6, depth))
    return rows


def _by_package(rows: list[tuple[str, float, float, int]], top: int) -> list[tuple[str, float]]:
    """Own import time summed by top-level package, largest first."""
    totals: dict[str, float] = {}
    for module, own_s, _, _ in rows:
        package = module.split(".")[0]
        totals[package] = totals.get(package, 0.0) + own_s
    return sorted(totals.items(), key=lambda row: -row[1])[:top]


def test_startup_and_single_question(capsys):
    instance = ONE_MODEL_ONE_REGION
    cases = {
        "fleetplan --help": _command("--help"),
        "fleetplan catalog gpus": _command("catalog", "gpus"),
        "fleetplan solve (1 model, 1 region)": _command("solve", str(instance)),
        "python -c pass (interpreter alone)": [sys.executable, "-c", "pass"],
    }
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(RUNS):  # interleaved, so that machine load hits every row alike
        for name, argv in cases.items():
            wall, cpu = _wall_and_cpu_s(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    with capsys.disabled():
        print(f"\nstart-up, seconds over {RUNS} runs each (interleaved)")
        print(f"{'command':40} {'median':>8} {'fastest':>8} {'CPU med':>8}")
        for name, values in walls.items():
            print(
                f"{name:40} {statistics.median(values):8.3f} {min(values):8.3f}"
                f" {statistics.median(cpus[name]):8.3f}"
            )
        rows = _import_times(cases["fleetplan solve (1 model, 1 region)"])
        print(
            f"\nimport breakdown of the solve: {len(rows)} modules, "
            f"{sum(row[1] for row in rows):.3f} s of imports"
        )
        print("  by package (own time of its modules, seconds)")
        for package, seconds in _by_package(rows, 12):
            print(f"    {package:36} {seconds:8.3f}")
        print("  slowest modules (own time, seconds)")
        for module, own_s, _, _ in sorted(rows, key=lambda row: -row[1])[:10]:
            print(f"    {module:36} {own_s:8.3f}")
        print("  top-level imports (cumulative, seconds)")
        top_level = [row for row in rows if row[3] == 0]
        for module, _, cumulative_s, _ in sorted(top_level, key=lambda row: -row[2])[:10]:
            print(f"    {module:36} {cumulative_s:8.3f}")
