"""Template capacity by guided probes (solver.colocation.capacity_search) against the
bisection of models.colocation.coresident.group_capacity that it replaced, side by side:
each instance solved as its golden test solves it (solver.studies.batch.solve_one: one
thread, the verifier again), base and guided interleaved A B A B, each run in a fresh
process (the physics' mixture table is warm after a run: solver.colocation.groups
evaluates the same groups), its user CPU, the physics' runs, the cost and the templates.
Run by `make bench` only (not `make test`); no timed assertions, but the templates and
the plan's cost must be the same in both.

Instances: instances/zipf-20-models.yaml (20 models, co-location at peak),
tests/bench/test_colocation_bench.py's 20 Zipf fine-tunes surviving a region, and
tests/fixtures/colocation-3-months.yaml (three small workloads sharing H100s over 10
periods a day and 3 months: templates built per period from what earlier builds learnt).

Tried and left out (zipf-20-models, counting the physics' runs, the same templates):
- Column generation's checks at the peaks (36 runs, as many as the supports' searches
  now) in another order within a round, so that one check's answer settles others on
  the same edge (the round's later checks alike and below a check run first: nearest
  first 36, lowest first 44, the median of those comparable 34, a guess of the outcome
  from the loads seen 33). An oracle knowing every answer needs about 20, but most of
  the saving lies across rounds, whose order is the search's path.
- Extrapolating the secant along one side's last two probes where the bracket's other
  end has no ratio (it is answered by the edge): 32 runs either way.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROUNDS = 2
"""A B rounds per instance."""

CASES = {
    "zipf-20-models": "instances/zipf-20-models.yaml",
    "zipf-20-region": None,  # tests/bench/test_colocation_bench.zipf_instance(20, "region")
    "colocation-3-months": "tests/fixtures/colocation-3-months.yaml",
}


def run_one(mode: str, name: str) -> dict:
    """One golden-style solve of `name` with the templates' capacity by `mode` ("base":
    models' bisection, as before; "guided": today's), in this process."""
    import models.colocation.coresident as coresident
    import solver.colocation.capacity_search as capacity_search
    from models.io.loading import load_instance, validate_instance
    from solver.studies.batch import solve_one
    from tests.bench.test_colocation_bench import zipf_instance

    runs = []
    physics = coresident.evaluate_group

    def counted(*args, **kwargs):
        runs.append(1)
        return physics(*args, **kwargs)

    coresident.evaluate_group = counted
    if mode == "base":

        def bisected(layout, members, efficiency, factor, steps, known=None, at_hand=None):
            del at_hand
            return coresident.group_capacity(
                layout, members, efficiency, factor, bisection_steps=steps, known=known
            )

        capacity_search.guided_capacity = bisected
    templates = []
    import solver.colocation.groups as groups

    build = groups.build_groups

    def kept(*args, **kwargs):
        table = build(*args, **kwargs)
        templates.extend(
            (t.key, t.load_scale, t.capacity_requests_per_s, str(t.limit), t.limiting_member)
            for t in table.templates
        )
        return table

    groups.build_groups = kept
    import solver.colocation.templates as memo

    memo.build_groups = kept
    path = CASES[name]
    if path is None:
        instance = validate_instance(zipf_instance(20, "region"), "zipf-20-region.yaml")
    else:
        instance = load_instance(path)
    started = time.process_time()
    outcome = solve_one(path or "zipf-20-region.yaml", instance, None)
    return {
        "cpu_s": time.process_time() - started,
        "runs": len(runs),
        "status": outcome.status,
        "cost": outcome.cost_per_month,
        "verified": outcome.verified,
        "templates": sorted(templates),  # the held fleet's build runs beside the periods'
    }


def _in_process(mode: str, name: str) -> dict:
    root = Path(__file__).resolve().parents[2]
    code = (
        "import json, sys; from tests.bench.test_capacity_search_bench import run_one; "
        f"print(json.dumps(run_one({mode!r}, {name!r})))"
    )
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_guided_capacity_side_by_side(name):
    rows = []
    for _ in range(ROUNDS):
        for mode in ("base", "guided"):
            rows.append((mode, _in_process(mode, name)))
    base = [r for m, r in rows if m == "base"]
    guided = [r for m, r in rows if m == "guided"]
    assert all(r["templates"] == base[0]["templates"] for r in base + guided)
    assert all(r["cost"] == base[0]["cost"] and r["verified"] for r in base + guided)
    cpu = {m: min(r["cpu_s"] for mm, r in rows if mm == m) for m in ("base", "guided")}
    print(f"\n{name}: the same templates and cost ({base[0]['cost']:,.2f}), every plan verified")
    for mode, r in rows:
        print(f"  {mode:7s} user CPU {r['cpu_s']:6.2f} s  physics runs {r['runs']:4d}")
    ratio = cpu["guided"] / cpu["base"]
    print(f"  guided / base user CPU (best of {ROUNDS} each): {ratio:.2f}")
