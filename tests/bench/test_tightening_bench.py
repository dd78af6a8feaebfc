"""The valid inequalities of solver.program.families.tightening, off and on, side by side.
Run by `make bench` only (not `make test`).

For each shipped instance in `INSTANCES`, the whole program (as `solve` builds it, at the
policy defaults: whole servers, one configuration per pool) is built twice, with
`SolveSettings.tighten` off and on, and each is handed to HiGHS directly (one thread,
cold: no warm start, no decomposition) under `SEEDS` random seeds, since the node count
of one seed varies threefold on chat-3region (1,082 to 3,945 nodes). One table row per
instance and setting: the LP relaxation's bound (the root before cuts), the bound after
HiGHS's root cuts (seed 0, the search stopped after the root), the mean node
count and HiGHS CPU seconds over the seeds, the largest gap left, and then the wall time
of the whole pipeline (`solve_program`: warm start, solve, pricing, verifier) once; the
`on / off` rows give the ratios. The optima of the two programs must agree within the
instance's gap (the rows are valid: they remove no plan).
"""

import statistics
import time
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from models.operations.scenarios import failure_scenarios
from solver.backends.base import compile_program
from solver.backends.highs import _new_highs, highs_lp
from solver.candidates.table import build_candidates
from solver.program.build import build_program
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.paths import INSTANCES as INSTANCE_FOLDER

INSTANCES = ["chat-3region", "seed-chat-sizing", "disaggregated", "long-prompt-32k"]
"""Shipped instances with pooling steps and whole servers (seed-chat-sizing: replica loss)."""
SEEDS = (0, 1, 2)
TIME_LIMIT_S = 120.0


def _highs_run(lp, seed: int, relax: bool, root_only: bool = False) -> dict[str, float]:
    """HiGHS on the program (relaxed: the LP bound; `root_only`: the bound after the
    root's cuts), one thread, the instance's gap."""
    compiled = compile_program(lp)
    model = highs_lp(compiled)
    if relax:
        model.integrality_ = []
    highs = _new_highs()
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("random_seed", seed)
    highs.setOptionValue("mip_rel_gap", 1e-3)
    highs.setOptionValue("mip_allow_restart", False)  # as the highs backend runs it
    highs.setOptionValue("time_limit", TIME_LIMIT_S)
    if root_only:
        highs.setOptionValue("mip_max_nodes", 1)
    highs.passModel(model)
    started = time.process_time()
    highs.run()
    info = highs.getInfo()
    constant = compiled.objective_constant
    return {
        "cpu_s": time.process_time() - started,
        "objective": info.objective_function_value + constant,
        "bound": (info.objective_function_value if relax else info.mip_dual_bound) + constant,
        "nodes": 0 if relax else info.mip_node_count,
    }


def _measure(name: str, tighten: bool) -> dict[str, float]:
    instance = load_instance(INSTANCE_FOLDER / f"{name}.yaml")
    settings = replace(SolveSettings.of(instance), tighten=tighten)
    table = build_candidates(instance, settings)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    lp = build_program(instance, table, settings=settings, sets=sets).lp
    relaxed = _highs_run(lp, 0, relax=True)
    root = _highs_run(lp, 0, relax=False, root_only=True)
    runs = [_highs_run(lp, seed, relax=False) for seed in SEEDS]
    started = time.perf_counter()
    solved = solve_program(instance, settings)
    pipeline_s = time.perf_counter() - started
    return {
        "rows": len(lp.constraints),
        "lp_bound": relaxed["bound"],
        "root_bound": root["bound"],
        "nodes": statistics.mean(run["nodes"] for run in runs),
        "cpu_s": statistics.mean(run["cpu_s"] for run in runs),
        "objective": min(run["objective"] for run in runs),
        "gap": max((run["objective"] - run["bound"]) / run["objective"] for run in runs),
        "pipeline_s": pipeline_s,
        "plan_cost": solved.plan.cost_per_month,
    }


@pytest.mark.parametrize("name", INSTANCES)
def test_tightening_side_by_side(name):
    off, on = _measure(name, False), _measure(name, True)
    print(f"\n{name}: whole program, HiGHS 1 thread, mean of seeds {SEEDS}")
    print(
        f"{'tighten':8} {'rows':>6} {'LP bound':>12} {'after cuts':>12} {'nodes':>8} "
        f"{'HiGHS CPU s':>12} "
        f"{'gap':>7} {'pipeline s':>11} {'$/month':>10}"
    )
    for label, m in (("off", off), ("on", on)):
        print(
            f"{label:8} {m['rows']:>6} {m['lp_bound']:>12,.0f} {m['root_bound']:>12,.0f} "
            f"{m['nodes']:>8.0f} "
            f"{m['cpu_s']:>12.2f} {m['gap']:>7.3%} {m['pipeline_s']:>11.2f} "
            f"{m['plan_cost']:>10,.0f}"
        )
    print(
        f"{'on / off':8} {'':>6} {on['lp_bound'] / off['lp_bound']:>12.4f} "
        f"{on['root_bound'] / off['root_bound']:>12.4f} "
        f"{on['nodes'] / max(off['nodes'], 1):>8.2f} {on['cpu_s'] / off['cpu_s']:>12.2f} "
        f"{'':>7} {on['pipeline_s'] / off['pipeline_s']:>11.2f}"
    )
    # Valid rows remove no plan: the optima agree within the gap (1e-3 each side).
    assert on["objective"] == pytest.approx(off["objective"], rel=2.5e-3)
