"""Two speed-ups of chat-3region's proof (tests/bench/test_chat3region_formulations.py)
measured on every program they would touch: HiGHS's RINS and RENS heuristics off, and the
pool_ladder rows (solver.program.families.pooling, kept: `links` below is the program as
built, `no links` the same program less those rows). Run by `make bench` only.

The program of each instance is the one `solve` hands HiGHS last among its widest MIPs
(captured from the highs backend, as test_chat3region_formulations.py does), with its
start and its gap: every golden instance, and `EXTRA` where present. Each variant runs
under `SEEDS`, one thread, from the start, each seed's variants one after the other;
printed: mean HiGHS CPU seconds (time.process_time around the run: the machine is
shared, wall time is noise there), mean nodes, and the optimum.

Run of record (shared 2-core machine, load 10-12, HiGHS 1.16, seeds 0-2; CPU s / nodes):

                            no links        rins+rens off    links            rins+rens off,
                            (main before)   no links         (kept)           links
    chat-3region            3.70 s  462 n   2.90 s  445 n    3.37 s  354 n    2.68 s  350 n
    diurnal-chat-batch      3.40 s    6 n   4.10 s  431 n    3.06 s    4 n    4.15 s  486 n
    disaggregated           0.16 s    2 n   0.11 s    2 n    0.13 s    4 n    0.10 s    4 n
    long-prompt-32k-cached  0.07 s    1 n   0.06 s    1 n    0.05 s    1 n    0.05 s    1 n
    total, these four       7.33 s          7.17 s           6.61 s           6.98 s
    g5x8x4r (at 60 s wall)  no proof: bound $180,106 under every variant; incumbents
                            $185,595 on 2 of 3 seeds of each (links, seed 2: $187,172)

All optima equal (chat-3region $236,520, diurnal-chat-batch $26,981). RINS and RENS
off is 21% slower on diurnal-chat-batch (nodes 6 -> 431: those heuristics find its plan;
its program has no start), so it was not kept; the links are 9-19% faster on the three
that branch, nodes down on chat-3region by a quarter. hourly-failover-3 closes at the
root (0.01 s) under every variant.

Only the instances whose program takes HiGHS a branching are listed; the other goldens'
final programs (kv-tiers-doc-qa, long-prompt-32k, moe-ep, offline-batch,
prefix-affinity-doc-qa, procurement-3region, region-loss-2, region-loss-3(-baseline),
seed-chat-sizing, tpot-pooling, two-generations, unified, voice-agent, zipf-20-models,
growth-horizon) close at the root in under 0.1 s under every variant.
"""

import statistics
import time
from pathlib import Path

import pytest

from models.io.loading import load_instance
from solver.backends import highs as highs_backend
from solver.backends.highs import _core, _new_highs, highs_lp
from solver.solve import solve
from tests.paths import INSTANCES

SEEDS = (0, 1, 2)
TIME_LIMIT_S = 120.0
EXTRA = (Path("/tmp/s12/g5x8x4r.yaml"), Path("/tmp/s12/hourly-failover-3.yaml"))
"""Generated instances of earlier benches (5 x 8 x 4 regions; hourly failover, 3 regions):
measured when present."""
RINS_RENS_OFF = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False}
VARIANTS = {
    "no links": ({}, False),
    "rins + rens off, no links": (RINS_RENS_OFF, False),
    "links": ({}, True),
    "rins + rens off, links": (RINS_RENS_OFF, True),
}


def captured(path: Path):
    """(the last of the widest MIPs `solve` hands HiGHS, its gap), or None without one."""
    calls = []
    original = highs_backend.HighsBackend._solve

    def capture(self, program, options, deadline):
        calls.append((program, options.mip_gap))
        return original(self, program, options, deadline)

    highs_backend.HighsBackend._solve = capture
    try:
        solve(load_instance(path))
    finally:
        highs_backend.HighsBackend._solve = original
    mips = [(p, gap) for p, gap in calls if p.is_mip]
    if not mips:
        return None
    widest = max(len(p.variable_names) for p, _ in mips)
    return [(p, gap) for p, gap in mips if len(p.variable_names) == widest][-1]


def run(program, gap: float, seed: int, options: dict, links: bool) -> dict:
    """HiGHS on `program` (less its pool_ladder rows unless `links`), from its start."""
    highs = _new_highs()
    settings = {
        "threads": 1,
        "random_seed": seed,
        "mip_rel_gap": gap,
        "mip_allow_restart": False,  # as the highs backend runs it
        "time_limit": TIME_LIMIT_S,
    }
    for option, value in {**settings, **options}.items():
        highs.setOptionValue(option, value)
    highs.passModel(highs_lp(program))
    if not links:
        rows = [i for i, n in enumerate(program.constraint_names) if n.startswith("pool_ladder[")]
        if rows:
            highs.deleteRows(len(rows), rows)
    if program.start is not None:
        start = _core().HighsSolution()
        start.col_value = list(program.start)
        start.value_valid = True
        highs.setSolution(start)
    started = time.process_time()
    highs.run()
    info = highs.getInfo()
    return {
        "cpu_s": time.process_time() - started,
        "nodes": info.mip_node_count,
        "objective": info.objective_function_value + program.objective_constant,
    }


def test_ladder_and_heuristics_across_programs():
    paths = sorted(INSTANCES.glob("*.yaml")) + [p for p in EXTRA if p.exists()]
    print(f"\nHiGHS 1 thread, from the start, seeds {SEEDS}: mean CPU s / mean nodes")
    print(f"{'':26}" + "".join(f"{label:>28}" for label in VARIANTS))
    for path in paths:
        found = captured(path)
        if found is None:
            continue
        program, gap = found
        runs = {label: [] for label in VARIANTS}
        for seed in SEEDS:
            for label, (options, links) in VARIANTS.items():
                runs[label].append(run(program, gap, seed, options, links))
        cells = "".join(
            f"{statistics.mean(r['cpu_s'] for r in done):>20.2f} s "
            f"{statistics.mean(r['nodes'] for r in done):>5.0f} n"
            for done in runs.values()
        )
        print(f"{path.stem:26}{cells}")
        optimum = min(r["objective"] for r in runs["no links"])
        for done in runs.values():
            # exact variants: the same optimum within the gap
            assert min(r["objective"] for r in done) == pytest.approx(optimum, rel=2 * gap)
