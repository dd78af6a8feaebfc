"""Start-up and single-question wall times of the `fleetplan` command (issue 19).

Run by `make bench` only. Each command runs as a fresh process, several times in turn; the
table gives the median and the fastest run, side by side in one run of the benchmark, and
the import breakdown (`python -X importtime`) of the slowest command: the ten modules with
the largest cumulative import time.

Targets on a quiet machine: `fleetplan --help` and `fleetplan catalog gpus` under 0.2 s;
a one-model, one-region solve under 0.3 s. A loaded machine (CI, other jobs) is slower;
the ratios between the rows hold.
"""

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


def _wall_s(argv: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-2000:]
    return wall


def _import_breakdown(argv: list[str], top: int = 10) -> list[tuple[str, float]]:
    result = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], cwd=REPO, capture_output=True, text=True
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        try:
            cumulative_us = int(cumulative)
        except ValueError:
            continue
        if not name.startswith("  "):  # top-level imports only: one space, no nesting
            rows.append((name.strip(), cumulative_us / 1e6))
    return sorted(rows, key=lambda row: -row[1])[:top]


def test_startup_and_single_question(capsys):
    instance = ONE_MODEL_ONE_REGION
    cases = {
        "fleetplan --help": _command("--help"),
        "fleetplan catalog gpus": _command("catalog", "gpus"),
        "fleetplan solve (1 model, 1 region)": _command("solve", str(instance)),
        "python -c pass (interpreter alone)": [sys.executable, "-c", "pass"],
    }
    walls: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(RUNS):  # interleaved, so that machine load hits every row alike
        for name, argv in cases.items():
            walls[name].append(_wall_s(argv))
    with capsys.disabled():
        print(f"\nstart-up, wall seconds over {RUNS} runs each (interleaved)")
        print(f"{'command':40} {'median':>8} {'fastest':>8}")
        for name, values in walls.items():
            print(f"{name:40} {statistics.median(values):8.3f} {min(values):8.3f}")
        print("\nimport breakdown of the solve (cumulative seconds, top-level modules)")
        for module, seconds in _import_breakdown(cases["fleetplan solve (1 model, 1 region)"]):
            print(f"  {module:38} {seconds:8.3f}")
