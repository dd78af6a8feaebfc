"""The scale sweep across horizons: generated instances (peak hour, hourly day, months)
through every output of the CLI, each command a process of its own as a user runs it.

    PYTHONPATH=. python -m tests.bench.scale_sweep --out /tmp/sweep [--quick] [--only TEXT]

For each case (tests.synthetic / tests.synthetic_time; size, what the fleet survives,
the generator's single GPUs or the policy's defaults, a time limit) it runs `solve
--json` and `verify` on the plan written; for the first case of each size and horizon
also `explain --json`, `explain --levers`, `report` (HTML), `report --plan` and
`simulate` on the plan; then `batch --update` and
`batch --check` on a folder of the small instances, and `sweep` on a grid over one of
them. Each row: exit code, wall and CPU seconds against the limit, whether the plan
verifies, status and gap, and the last line of any message that is a traceback or names
no field. Printed as a Markdown table (and appended to OUT/matrix.md as rows end).
No assertions: tests/bench/test_scale_sweep.py asserts what must hold.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.paths import REPO
from tests.synthetic import at_policy_defaults, generated_data
from tests.synthetic_time import hourly_data, months_data, with_features

CLI = [sys.executable, "-c", "from cli.app import main; main()"]
SURVIVE = ["none", "region", "zone"]
LIMITS_S = [5.0, 20.0]
SIZES = {
    "peak": [(3, 3, 2), (5, 8, 3), (10, 20, 6)],
    "hourly": [(3, 3, 2), (5, 10, 3)],
    "months": [(3, 3, 2), (3, 6, 2)],
}
"""(regions, workloads, GPU types) of each horizon, small to large."""
OVERRUN_S = 10.0
"""Seconds of start-up and read-back a limit may be overrun by beyond twice itself."""


@dataclass
class Case:
    """One generated instance and the limit it is solved under."""

    horizon: str
    size: tuple[int, int, int]
    survive: str
    defaults: bool
    limit_s: float
    features: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> dict[str, Any]:
        """The instance file's contents."""
        regions, workloads, gpus = self.size
        if self.horizon == "peak":
            data = generated_data(regions, workloads, gpus, self.survive, 0)
            if self.defaults:
                data = at_policy_defaults(data)
                data["name"] += "-defaults"
        elif self.horizon == "hourly":
            data = hourly_data(regions, workloads, gpus, self.survive, 0, defaults=self.defaults)
        else:
            data = months_data(regions, workloads, gpus, self.survive, 0, defaults=self.defaults)
        return with_features(data, **self.features) if self.features else data

    @property
    def label(self) -> str:
        return self.data["name"]


def run(args: list[str], cwd: Path, timeout_s: float) -> dict[str, Any]:
    """One fleetplan process: exit code, wall and CPU seconds, the last stderr line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = os.environ | {"PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run(
            CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s
        )
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        rc, out, err = "killed", expired.stdout or "", expired.stderr or ""
        out, err = _text(out), _text(err)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    lines = [line for line in err.splitlines() if line.strip()]
    return {
        "rc": rc,
        "wall_s": wall,
        "cpu_s": cpu,
        "traceback": "Traceback" in err or "Traceback" in out or rc == 70,
        "message": lines[-1][:160] if lines else "",
        "stdout": out,
    }


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def solve_row(case: Case, folder: Path) -> dict[str, Any]:
    """`solve --json` and `verify` on one case."""
    name = case.label
    stem = f"{name}-{case.limit_s:g}s"
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(case.data, sort_keys=False))
    limit = ["--time-limit", f"{case.limit_s:g}"]
    solved = run(
        ["solve", f"{name}.yaml", "--json", f"{stem}.json", *limit], folder, 6 * case.limit_s + 120
    )
    row = {"case": stem, "command": "solve --json", **solved, "limit_s": case.limit_s}
    plan_file = folder / f"{stem}.json"
    if solved["rc"] == 0 and plan_file.exists():
        plan = json.loads(plan_file.read_text())
        row["status"] = plan.get("status")
        row["gap"] = (plan.get("solver") or {}).get("mip_gap")
        row["cost"] = plan.get("cost_per_month")
        row["method"] = (plan.get("solver") or {}).get("method", "")
        checked = run(["verify", f"{name}.yaml", f"{stem}.json"], folder, 600)
        row["verified"] = checked["rc"] == 0
        if checked["rc"] != 0:
            row["message"] = f"verify rc={checked['rc']}: {checked['message']}"
            row["traceback"] = row["traceback"] or checked["traceback"]
    return row


def output_rows(case: Case, folder: Path) -> list[dict[str, Any]]:
    """`explain --json`, `explain --levers` and `report` on one case, and `report --plan`
    and `simulate` (2 minutes of arrivals) on its plan where `solve_row` wrote one."""
    name = case.label
    limit = f"{case.limit_s:g}"
    rows = []
    for command, args in [
        ("explain --json", ["explain", f"{name}.yaml", "--json", f"{name}-explain.json"]),
        ("explain --levers", ["explain", f"{name}.yaml", "--levers"]),
    ]:
        result = run([*args, "--time-limit", limit], folder, 8 * case.limit_s + 180)
        rows.append({"case": name, "command": command, **result, "limit_s": case.limit_s})
    report = [
        "report",
        f"{name}.yaml",
        "-o",
        f"{name}.html",
        "--set",
        f"solver.time_limit_s={limit}",
    ]
    result = run(report, folder, 6 * case.limit_s + 120)
    html = folder / f"{name}.html"
    if result["rc"] == 0 and not (html.exists() and html.stat().st_size > 1000):
        result["message"] = "no HTML written"
    rows.append({"case": name, "command": "report", **result, "limit_s": case.limit_s})
    plan = folder / f"{name}-{limit}s.json"
    if plan.exists() and "cost_per_month" in json.loads(plan.read_text()):  # not no_solution
        result = run(
            ["report", f"{name}.yaml", "--plan", plan.name, "-o", f"{name}-plan.html"],
            folder,
            600,
        )
        rows.append({"case": name, "command": "report --plan", **result, "limit_s": None})
        result = run(["simulate", f"{name}.yaml", plan.name, "--minutes", "2"], folder, 900)
        rows.append({"case": name, "command": "simulate", **result, "limit_s": None})
    return rows


def batch_rows(cases: list[Case], folder: Path) -> list[dict[str, Any]]:
    """`batch --update` then `batch --check` on a folder of `cases`' instances."""
    batch = folder / "batch"
    batch.mkdir(exist_ok=True)
    for case in cases:
        data = case.data | {"solver": case.data["solver"] | {"time_limit_s": case.limit_s}}
        (batch / f"{case.label}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    limit = sum(case.limit_s for case in cases)
    rows = []
    for command in (["--update"], ["--check"], ["--check", "--strict"]):
        result = run(["batch", "batch", *command, "--json", "batch.json"], folder, 6 * limit + 300)
        rows.append(
            {
                "case": f"{len(cases)} instances",
                "command": "batch " + " ".join(command),
                **result,
                "limit_s": limit,
            }
        )
    return rows


def sweep_rows(case: Case, folder: Path) -> list[dict[str, Any]]:
    """`sweep` on a 2 x 2 grid of demand growth and one region's price over `case`."""
    name = case.label
    data = case.data
    region = data["regions"][0]["name"]
    gpu = next(iter(data["regions"][0]["supply"]))
    grid = {
        "instance": f"{name}.yaml",
        "set": {"solver.time_limit_s": case.limit_s},
        "axes": {
            "demand_growth": [1.0, 1.3],
            f"regions[{region}].supply.{gpu}.price_per_gpu_hour": [1.5, 4.0],
        },
    }
    (folder / f"{name}-grid.yaml").write_text(yaml.safe_dump(grid, sort_keys=False))
    result = run(
        [
            "sweep",
            f"{name}-grid.yaml",
            "--json",
            f"{name}-sweep.json",
            "--out",
            f"{name}-sweep.jsonl",
        ],
        folder,
        4 * 6 * case.limit_s + 300,
    )
    return [{"case": name, "command": "sweep (2 x 2)", **result, "limit_s": 4 * case.limit_s}]


def flagged(row: dict[str, Any]) -> str:
    """What is wrong with a row, or ''."""
    problems = []
    if row["traceback"]:
        problems.append("TRACEBACK")
    if row["rc"] == "killed":
        problems.append("KILLED")
    limit = row.get("limit_s")
    if limit and row["wall_s"] > 2 * limit + OVERRUN_S:
        problems.append("OVERRUN")
    if row.get("verified") is False:
        problems.append("UNVERIFIED")
    if row["rc"] not in (0, 3, 4) and not problems:
        problems.append(f"rc {row['rc']}")
    return " ".join(problems)


COLUMNS = ["case", "command", "rc", "wall s", "cpu s", "limit s", "verified", "status"]
COLUMNS += ["gap", "flag", "message"]
HEADER = "| " + " | ".join(COLUMNS) + " |"


def markdown(row: dict[str, Any]) -> str:
    gap = row.get("gap")
    cells = [
        row["case"],
        row["command"],
        str(row["rc"]),
        f"{row['wall_s']:.1f}",
        f"{row['cpu_s']:.1f}",
        "" if row.get("limit_s") is None else f"{row['limit_s']:g}",
        {True: "yes", False: "NO", None: ""}[row.get("verified")],
        row.get("status") or "",
        "" if gap is None else f"{gap:.2%}",
        flagged(row),
        (row["message"] if row["rc"] != 0 or row["traceback"] else "").replace("|", "/"),
    ]
    return "| " + " | ".join(cells) + " |"


def cases(quick: bool) -> list[Case]:
    """The matrix: every horizon's sizes x survive x single GPUs/defaults x limits, and
    the features on the smallest hourly and months instances."""
    found = []
    for horizon, sizes in SIZES.items():
        for size in sizes[:1] if quick else sizes:
            for limit_s in LIMITS_S[:1] if quick else LIMITS_S:
                for defaults in (False, True):
                    for survive in SURVIVE:
                        found.append(Case(horizon, size, survive, defaults, limit_s))
    for features in (
        {"power_kw": 60.0},
        {"colocation": True},
        {"disaggregation": True},
        {"kv_tiers": True},
    ):
        for horizon in ("peak", "hourly", "months"):
            found.append(Case(horizon, (3, 3, 2), "region", False, LIMITS_S[-1], features))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="run the cases whose label has this text")
    parser.add_argument("--no-outputs", action="store_true")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    report = options.out / "matrix.md"
    with report.open("a") as out:
        out.write(HEADER + "\n|" + "---|" * len(COLUMNS) + "\n")
    every = [case for case in cases(options.quick) if options.only in case.label]
    every.sort(key=lambda case: case.size[0] * case.size[1])  # small first, stable
    seen = set()

    def emit(row: dict[str, Any]) -> None:
        line = markdown(row)
        print(line, flush=True)
        with report.open("a") as out:
            out.write(line + "\n")

    for case in every:
        emit(solve_row(case, options.out))
        first = (case.horizon, case.size, bool(case.features))
        if not options.no_outputs and first not in seen and not case.features:
            seen.add(first)
            for row in output_rows(case, options.out):
                emit(row)
    if not options.no_outputs:
        small = [
            case
            for case in every
            if case.size == (3, 3, 2)
            and case.limit_s == 5.0
            and not case.features
            and case.survive != "zone"
        ]
        for row in batch_rows(small, options.out):
            emit(row)
        for row in sweep_rows(small[0] if small else every[0], options.out):
            emit(row)


if __name__ == "__main__":
    main()
