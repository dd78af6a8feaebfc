"""chat-3region's search under HiGHS's branching and heuristic options, and with server
rows, side by side (issue 33: the default instance proven optimal in under 1 s of solve).
Run by `make bench` only (not `make test`).

The whole program of `instances/chat-3region.yaml` (as `solve` builds it, at the policy
defaults) is handed to HiGHS directly, one thread, the instance's gap, without and with
its optimum as a start (`from optimum`: what proving the bound alone costs), under
`SEEDS` random seeds, each variant one after the other per seed (the machine is shared:
read the rows of one run against each other). Printed per variant: the mean HiGHS CPU
seconds and nodes, and the optimum found. Variants:

- `today`: the options the highs backend sets (solver.backends.highs), among them
  `mip_pscost_minreliable` at `PSCOST_MIN_RELIABLE` where set (else HiGHS's own, 8):
  strong branching probes a column's pseudo-cost that many times before branching
  trusts it. Strong branching is most of the search's LP iterations (19,427 of 33,438
  from the solve's start, seed 0).
- `pscost N`: that option at N instead. Shorter searches, off in the backend: it
  breaks the default instance's tie between optimal layouts differently (the module
  text of solver.backends.highs).
- `heuristics 0`: `mip_heuristic_effort` 0 (HiGHS's default 0.05): no sub-MIP heuristics
  (1.0 s of a 4.3 s search from the solve's start went to 32 sub-MIPs). Not kept.
- `server rows`: today's program plus one row per scenario f and set T of the regions
  that serve in f, on the whole servers of T:

      sum_{r in T, g} n_g x rho_f[r,g] x servers[r,g]  >=  L_f(T)

  L_f(T) the demand of the users whose every route in f ends in T (Hall: only T can
  serve them), n_g GPUs per server, rho_f[r,g] the most load one GPU of type g in r
  carries in f: over each pool of g in r, its capacity row's credit per replica at the
  top of its pooling ladder (q_0 + the steps' gains: pooled[k] <= replicas) over its
  GPUs, for the unified phase as it is, for a disaggregated precision the better of
  pi_g d* / (pi_g + d*) and p* delta_g / (p* + delta_g) (pi, delta: prefill and decode
  per GPU, p*, d*: their best over r's types). Valid: a phase's load is at most the
  credit of its pools, so unified load <= sum_g u_g GPUs_g; a disaggregated mode's load
  L is carried by both its prefill and decode pools, and with P_g, D_g their GPUs,
  sum_g t_g (P_g + D_g) >= L d* / (p* + d*) + L p* / (p* + d*) = L; the modes' pools are
  distinct, GPUs used <= n_g x servers (purchase, whole_servers; no existing fleet in
  chat-3region), and the load T carries in f is at least L_f(T). They remove no plan; the
  optimum must equal today's. A knapsack over few server columns, for HiGHS's cover and
  MIR cuts to round. Not kept: the root bound moves little ($213.2k -> $213.8k on the
  program the solve searches) and the search is no shorter.
"""

import itertools
import statistics
import time
from collections import defaultdict

import pytest

from models.io.loading import load_instance
from models.operations.scenarios import failure_scenarios
from solver.backends.base import compile_program
from solver.backends.highs import PSCOST_MIN_RELIABLE, _core, _new_highs, highs_lp
from solver.candidates.table import build_candidates
from solver.program.build import build_program, with_bounds
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import split_name
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.paths import INSTANCES as INSTANCE_FOLDER

INSTANCE = "chat-3region"
SEEDS = (0, 1, 2)
TIME_LIMIT_S = 120.0
GAP = 1e-3
VARIANTS = {
    "today": {},
    "pscost 2": {"mip_pscost_minreliable": 2},
    "pscost 1": {"mip_pscost_minreliable": 1},
    "heuristics 0": {"mip_heuristic_effort": 0.0},
    "server rows": {},
}


def _highs(lp: LinearProgram, seed: int, options: dict, start: dict | None) -> dict:
    """HiGHS on `lp` as the highs backend sets it, plus `options`, from `start`."""
    compiled = compile_program(lp)
    highs = _new_highs()
    settings = {
        "threads": 1,
        "random_seed": seed,
        "mip_rel_gap": GAP,
        "mip_allow_restart": False,
        "time_limit": TIME_LIMIT_S,
        "mip_pscost_minreliable": PSCOST_MIN_RELIABLE,
    }
    for option, value in {**settings, **options}.items():
        if value is not None:
            highs.setOptionValue(option, value)
    highs.passModel(highs_lp(compiled))
    if start is not None:
        solution = _core().HighsSolution()
        solution.col_value = [start.get(name, 0.0) for name in compiled.variable_names]
        solution.value_valid = True
        highs.setSolution(solution)
    started = time.process_time()
    highs.run()
    info = highs.getInfo()
    values = dict(zip(compiled.variable_names, highs.getSolution().col_value, strict=True))
    return {
        "cpu_s": time.process_time() - started,
        "nodes": info.mip_node_count,
        "objective": info.objective_function_value + compiled.objective_constant,
        "values": values,
    }


def _pool(name: str) -> tuple[str, ...]:
    """The pool (w, c, r) of a replicas or pooled column."""
    return split_name(name)[1][:3]


def server_rows(lp: LinearProgram) -> LinearProgram:
    """`lp` plus the server rows of the module text (a scenario and region whose capacity
    rows credit anything but replicas and pooling steps gets none)."""
    gpus, gpu_of, node = {}, {}, {}
    for row in lp.constraints.values():
        family, index = split_name(row.name)
        if family == "gpu_supply":
            for column, coefficient in row.coefficients.items():
                if split_name(column)[0] == "replicas":
                    gpus[_pool(column)], gpu_of[_pool(column)] = coefficient, index[1]
        elif family == "whole_servers":
            node[index] = -row.coefficients[f"servers[{index[0]},{index[1]}]"]
    per_gpu: dict = defaultdict(lambda: defaultdict(dict))  # (f, r) -> phase -> g -> load
    broken = set()
    for row in lp.constraints.values():
        if row.family != "capacity":
            continue
        f, _w, r, phase = split_name(row.name)[1]
        load = max((-c for c in row.coefficients.values() if c < 0), default=0.0)
        if load <= 0:  # no load routed to it
            continue
        credit: dict = defaultdict(float)
        for column, coefficient in row.coefficients.items():
            if coefficient <= 0:
                continue
            if split_name(column)[0] not in ("replicas", "pooled"):
                broken.add((f, r))
            credit[_pool(column)] += coefficient
        for pool, top in credit.items():
            if pool in gpus:
                best = per_gpu[(f, r)][phase]
                g = gpu_of[pool]
                best[g] = max(best.get(g, 0.0), top / gpus[pool] / load)
    rho = {}
    for key, phases in per_gpu.items():
        rate: dict = defaultdict(float)
        for g, value in phases.get("unified", {}).items():
            rate[g] = max(rate[g], value)
        for precision in {p.split("-", 1)[1] for p in phases if p != "unified"}:
            prefill = phases.get(f"prefill-{precision}", {})
            decode = phases.get(f"decode-{precision}", {})
            if not prefill or not decode:
                continue
            p_best, d_best = max(prefill.values()), max(decode.values())
            for g in set(prefill) | set(decode):
                p, d = prefill.get(g, 0.0), decode.get(g, 0.0)
                rate[g] = max(rate[g], p * d_best / (p + d_best), p_best * d / (p_best + d))
        rho[key] = rate
    users = defaultdict(list)  # f -> [(demand, the regions its routes end in)]
    for row in lp.constraints.values():
        family, index = split_name(row.name)
        if family == "demand":
            ends = {split_name(c)[1][3] for c in row.coefficients if c.startswith("served[")}
            users[index[0]].append((row.rhs, ends))
    copy = with_bounds(lp, {})
    for f, routed in users.items():
        regions = sorted(set().union(*(ends for _, ends in routed)))
        for size in range(1, len(regions) + 1):
            for served in itertools.combinations(regions, size):
                if any((f, r) in broken for r in served):
                    continue
                demand = sum(d for d, ends in routed if ends <= set(served))
                terms: dict = defaultdict(float)
                for r in served:
                    for g, rate in rho.get((f, r), {}).items():
                        terms[f"servers[{r},{g}]" if (r, g) in node else f"purchased[{r},{g}]"] += (
                            node.get((r, g), 1.0) * rate
                        )
                if demand > 0 and terms:
                    name = f"server_rows[{f},{'+'.join(served)}]"
                    copy.constraints[name] = Constraint(
                        name, "server_rows", dict(terms), Sense.GE, demand
                    )
    return copy


def _mean(runs: list[dict], key: str) -> float:
    return statistics.mean(run[key] for run in runs)


@pytest.fixture(scope="module")
def program():
    instance = load_instance(INSTANCE_FOLDER / f"{INSTANCE}.yaml")
    settings = SolveSettings.of(instance)
    table = build_candidates(instance, settings)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    return build_program(instance, table, settings=settings, sets=sets)


def test_chat3region_search_options(program):
    lp = program.lp
    with_rows = server_rows(lp)
    optimum = _highs(lp, 0, {}, None)
    print(f"\n{INSTANCE}: whole program, HiGHS 1 thread, seeds {SEEDS} (mean CPU s, nodes)")
    print(f"{'':24} {'no start':>20} {'from optimum':>20} {'optimum':>12}")
    for label, options in VARIANTS.items():
        solved = with_rows if label == "server rows" else lp
        runs = {"none": [], "optimum": []}
        for seed in SEEDS:
            runs["none"].append(_highs(solved, seed, options, None))
            runs["optimum"].append(_highs(solved, seed, options, optimum["values"]))
        cells = [f"{_mean(r, 'cpu_s'):>8.2f} s {_mean(r, 'nodes'):>7.0f} n" for r in runs.values()]
        best = min(r["objective"] for rs in runs.values() for r in rs)
        print(f"{label:24} {cells[0]:>20} {cells[1]:>20} {best:>12,.0f}")
        # the same optimum within the gap (valid rows remove no plan; options change
        # only the search)
        assert best == pytest.approx(optimum["objective"], rel=2 * GAP)
    extra = len(with_rows.constraints) - len(lp.constraints)
    print(f"server rows: {extra} rows")
