"""Config dominance by size (solver.candidates.config_dominance, `sizes`), off and on,
side by side on every shipped instance. Run by `make bench` only (not `make test`).

For each shipped instance whose static program builds (`build_program` over its
candidate table, at the policy defaults), the program is bounded twice: with the pools
config dominance removes as a whole (`config_bounds(program)`: what the regions' own
programs get, and the whole-pool relation alone), and with the size bounds as well
(`config_bounds(program, sizes=True)`: what `optimal_reduction` gives the solve). Each is
handed to HiGHS directly (one thread, cold, gap `GAP`) under `SEEDS`, each seed's two
runs one after the other (the machine is shared: read the rows of one run against each
other). Printed per instance and variant: the pools removed and held to their low
sizes, the LP bound, the mean HiGHS CPU seconds and nodes, and the optimum. The two
optima must agree within the gap: the size bounds lose no optimum (the module docstring
of solver.candidates.config_dominance). Instances where the sizes add nothing are
listed once.

Run of record (shared 2-core machine, load 10-13, HiGHS 1.16, seeds 0-2, cold; mean CPU s
and nodes; every pair of optima equal):

    chat-3region     whole pools  removed 70 held  0  LP 203,242  13.67 s  2433 n
                     and sizes    removed 70 held 13  LP 203,242  11.90 s  2439 n
    two-generations  2 removed, 1 held: at the root in 0.01 s either way
    the other shipped instances: no size bound (0-4 pools removed as a whole, as on main)

The cap applies to pools with pipeline stages only (the module docstring says why); the
walk over sizes to every pool, where a stand-in that carries more holds only above some
size (two-generations, and chat-3region's TP8 bf16 prefill pools). chat-3region's LP bound
does not move (the relaxation credits a pool's top step on a fraction of a pool,
whatever sizes are left). Against main's reduction (the whole-pool relation without the
cap: 44 pools removed, none held) the whole `fleetplan solve` took 10.2, 9.5, 12.1 and
11.7 s of CPU against 18.8 (stopped at the time limit), 13.6, 13.3 and 16.3 s (A B A B
at load 8-13, every other run optimal at $236,520); with the cap on every pool (not
kept: it swapped disaggregated.yaml's 2 TP4 decode replicas for 4 TP2 ones at the same
cost and less headroom) HiGHS took, on the
program the solve hands it last, 5.6 s cold against 10.0 s and 2.7 s against 5.1 s from
the optimum (seeds 0-2, interleaved).
"""

import statistics
import time

import pytest

from models.io.loading import load_instance
from solver.backends.base import compile_program
from solver.backends.highs import _new_highs, highs_lp
from solver.candidates.config_dominance import config_bounds
from solver.candidates.table import build_candidates
from solver.program.build import build_program, with_bounds
from tests.paths import INSTANCES as INSTANCE_FOLDER

SEEDS = (0, 1, 2)
GAP = 1e-4
TIME_LIMIT_S = 120.0


def _run(lp, seed: int, relax: bool = False) -> tuple[float, int, float | None]:
    """(HiGHS CPU seconds, nodes, objective) of `lp`, one thread, cold."""
    compiled = compile_program(lp)
    model = highs_lp(compiled)
    if relax:
        model.integrality_ = []
    highs = _new_highs()
    for option, value in {
        "threads": 1,
        "random_seed": seed,
        "mip_rel_gap": GAP,
        "mip_allow_restart": False,  # as the highs backend runs it
        "time_limit": TIME_LIMIT_S,
    }.items():
        highs.setOptionValue(option, value)
    highs.passModel(model)
    started = time.process_time()
    highs.run()
    cpu = time.process_time() - started
    info = highs.getInfo()
    objective = info.objective_function_value + compiled.objective_constant
    return cpu, info.mip_node_count, objective


def test_config_sizes_keep_the_optimum_and_what_they_save():
    rows = []
    for path in sorted(INSTANCE_FOLDER.glob("*.yaml")):
        if path.name.endswith(".expected.yaml"):
            continue
        instance = load_instance(path)
        try:
            program = build_program(instance, build_candidates(instance))
        except Exception as exc:  # a periods or months instance: not a static program
            rows.append(f"{path.stem:28s} not a static program ({type(exc).__name__})")
            continue
        whole = config_bounds(program)
        sized = config_bounds(program, sizes=True)
        held = sum(1 for _, up in sized.values() if up > 0)
        if sized == whole:
            rows.append(f"{path.stem:28s} {len(whole)} pools removed, no size bound")
            continue
        variants = {"whole pools": whole, "and sizes": sized}
        results = {name: [] for name in variants}
        for seed in SEEDS:
            for name, bounds in variants.items():
                results[name].append(_run(with_bounds(program.lp, bounds), seed))
        optima = {name: results[name][0][2] for name in variants}
        assert optima["and sizes"] == pytest.approx(optima["whole pools"], rel=2 * GAP)
        for name, bounds in variants.items():
            lp_bound = _run(with_bounds(program.lp, bounds), 0, relax=True)[2]
            cpu = statistics.mean(r[0] for r in results[name])
            nodes = statistics.mean(r[1] for r in results[name])
            removed = sum(1 for _, up in bounds.values() if up == 0)
            kept = held if bounds is sized else 0
            rows.append(
                f"{path.stem:28s} {name:12s} removed {removed:3d} held {kept:3d}"
                f"  LP {lp_bound:12,.0f}  {cpu:6.2f} s  {nodes:6.0f} n  ${optima[name]:,.2f}"
            )
    print("\n" + "\n".join(rows))
