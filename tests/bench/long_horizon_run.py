"""One side-by-side round of growth-horizon at long horizons (monthly_growth 0.01) under
30 and 60 s limits, for tests/bench/test_long_horizon_limits_bench.py: each run is the
CLI in a fresh interpreter, the base tree (BASE, a worktree of main) then this one, A B
per cell, with wall and user CPU (/usr/bin/time) and from the JSON month 0's cost and
gap, the horizon's cost and gap, the months stopped at the limit and the months cut.

    python tests/bench/long_horizon_run.py BASE [HORIZONS] [LIMITS]
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
PYTHON = Path(sys.executable)


def run(tree: Path, months: int, limit_s: int) -> dict:
    """One CLI run of `tree` (a checkout) at `months` and `limit_s`: its figures."""
    with tempfile.TemporaryDirectory() as folder:
        out, timing = Path(folder, "plan.json"), Path(folder, "time")
        command = [
            "/usr/bin/time", "-f", "%e %U", "-o", str(timing),
            str(PYTHON.parent / "fleetplan"), "solve", "instances/growth-horizon.yaml",
            "--set", f"policy.horizon_months={months}", "--set", "policy.monthly_growth=0.01",
            "--time-limit", str(limit_s), "--json", str(out),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        wall_s, user_s = (float(x) for x in timing.read_text().split()[-2:])
        row = {"exit": done.returncode, "wall_s": wall_s, "user_s": user_s}
        if done.returncode == 0:
            plan = json.loads(out.read_text())
            first = plan["months"][0]
            row |= {
                "m0_cost": first["cost_per_month"],
                "m0_gap": first["mip_gap"],
                "horizon_cost": plan["horizon_cost"],
                "gap": plan["solver"]["mip_gap"],
                "stopped": sum(m["stopped_at_limit"] for m in plan["months"]),
                "cut": sum("cut at the time limit" in n for n in plan["notes"]),
            }
        else:
            row["message"] = done.stderr.strip().splitlines()[-1:]
        return row


def line(side: str, months: int, limit_s: int, row: dict) -> str:
    """The row as the docstring's table writes it."""
    load = os.getloadavg()[0]
    head = f"{months:4d} {limit_s:3d} {side:4s} {row['wall_s']:6.1f} {row['user_s']:6.1f}"
    if row["exit"]:
        return f"{head} exit {row['exit']} {row.get('message')} (load {load:.1f})"
    gap = "unknown" if row["gap"] is None else f"{row['gap']:.2%}"
    return (
        f"{head} ${row['m0_cost']:>8,.0f} {row['m0_gap']:7.2%} ${row['horizon_cost']:>12,.0f}"
        f" {gap:>8s} {row['stopped']:4d} {row['cut']:4d}  (load {load:.1f})"
    )


if __name__ == "__main__":
    base = Path(sys.argv[1])
    horizons = [int(h) for h in (sys.argv[2] if len(sys.argv) > 2 else "12,24,60,120").split(",")]
    limits = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "30,60").split(",")]
    print("   H   L side   wall   user   m0 cost  m0 gap  horizon cost  h. gap stop  cut")
    for months in horizons:
        for limit_s in limits:
            for side, tree in (("base", base), ("this", HERE)):
                print(line(side, months, limit_s, run(tree, months, limit_s)), flush=True)
