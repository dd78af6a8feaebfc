"""Where chat-3region's solve spends its time (issue 33), and one exact strengthening side
by side with today's program. Run by `make bench` only (not `make test`).

The whole program of `instances/chat-3region.yaml` (as `solve` builds it, at the policy
defaults: whole servers, one configuration per pool) is handed to HiGHS directly (one
thread, the instance's gap, no warm start, no decomposition) under `SEEDS` random seeds.
Printed, one row each:

- `today`: the LP relaxation's bound, the bound after HiGHS's root cuts, the mean node
  count and HiGHS CPU seconds, the optimum.
- `from optimum`: the same program started from its own optimum (HiGHS `setSolution`):
  what proving the bound alone costs.
- `<family> continuous`: the program with one family of integers relaxed (servers,
  pool_at_least, pool_used, replicas): its optimum says how much of the gap between the
  LP bound and the optimum that family's integrality holds.
- `region rows`: today's program plus one row per region r,

      sum_{columns j of r} cost_j x_j  >=  z_r

  where z_r is the proven bound (HiGHS's dual bound) of r's own program: the columns
  whose index names region r (its pools, pooling steps, purchases, servers, the
  requests served in r and its mode loads) and every row of the whole program that
  mentions only such columns (r's capacity and mode split rows in every scenario,
  pool rows, supply, purchase and whole servers, and its own users' `none` demand, which
  only r can serve). Valid: the restriction of any plan to r's columns satisfies every
  row of r's program, so its cost in r is at least r's optimum, and so at least z_r;
  the rows remove no plan and the optimum must equal today's. The CPU of the three
  region programs is printed beside the solve's.

The `ratio` row divides `region rows` by `today` (CPU including the region programs).

Two stronger families of valid rows, tried and not kept (each on top of the region rows,
one seed: `TRIED_SEEDS`), printed so that the measurement can be repeated:

- `pair rows`: one row per pair of regions {r, s}, cost_r + cost_s >= z_rs, z_rs the
  proven bound of the program of r's and s's columns (with three regions it holds the
  whole scenario that loses the third). Valid for the same reason as a region's row.
- `price rows`: one Lagrangian row per region r at the LP's prices y on the demand rows
  that are not in r's program (those that also name other regions):

      cost_r - sum_{served columns j of r} y_j x_j  >=  phi_r(y)

  phi_r(y) the proven bound of r's program with that objective. Valid: a plan restricted
  to r is a plan of r's program, so its priced cost is at least phi_r(y).

Both lift the LP bound above the region rows'; whether they shorten the search is what
their rows print (on the shared 2-core machine they did not: HiGHS's tree grew).

`region hull`: the Dantzig-Wolfe bound by region, by column generation: a master LP over
one convex combination of plans of each region's own program, held to the demand rows
that name several regions (the rows no region's program holds), and each region's
program priced at the master's duals for new columns, until none prices out below zero.
It is the best bound any rows over one region's columns can give (each region's program
convexified), so it caps region rows and price rows alike; what lies between it and the
optimum is how the regions' whole-server fleets combine.
"""

import itertools
import statistics
import time
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from models.operations.scenarios import failure_scenarios
from solver.backends.base import compile_program
from solver.backends.highs import _core, _new_highs, highs_lp
from solver.candidates.table import build_candidates
from solver.program.build import build_program, with_bounds
from solver.program.families.variables import ModeLoadColumn
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import split_name
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.paths import INSTANCES as INSTANCE_FOLDER

INSTANCE = "chat-3region"
SEEDS = (0, 1, 2)
TRIED_SEEDS = (0,)
TIME_LIMIT_S = 120.0
GAP = 1e-3
RELAXED_FAMILIES = ("servers", "pool_at_least", "pool_used", "replicas")
REGION_INDEX = {
    "replicas": 2,
    "pool_used": 2,
    "pool_at_least": 2,
    "pooled": 2,
    "purchased": 0,
    "servers": 0,
    "served": 3,
}
"""Where a column's index names its region (served[f,w,o,d]: the serving region d)."""


def _highs(lp: LinearProgram, seed: int = 0, **how) -> dict[str, float]:
    """HiGHS on `lp`, one thread: `relax` (the LP), `root_only` (stopped after the root),
    `start` (values to start from)."""
    compiled = compile_program(lp)
    model = highs_lp(compiled)
    if how.get("relax"):
        model.integrality_ = []
    highs = _new_highs()
    for option, value in (
        ("threads", 1),
        ("random_seed", seed),
        ("mip_rel_gap", GAP),
        ("mip_allow_restart", False),  # as the highs backend runs it
        ("time_limit", TIME_LIMIT_S),
    ):
        highs.setOptionValue(option, value)
    if how.get("root_only"):
        highs.setOptionValue("mip_max_nodes", 1)
    highs.passModel(model)
    if how.get("start"):
        start = _core().HighsSolution()
        start.col_value = [how["start"].get(name, 0.0) for name in compiled.variable_names]
        start.value_valid = True
        highs.setSolution(start)
    started = time.process_time()
    highs.run()
    info = highs.getInfo()
    constant = compiled.objective_constant
    solution = highs.getSolution()
    values = dict(zip(compiled.variable_names, solution.col_value, strict=True))
    duals = {}
    if how.get("relax") and solution.dual_valid:
        duals = dict(zip(compiled.constraint_names, solution.row_dual, strict=True))
    return {
        "duals": duals,
        "cpu_s": time.process_time() - started,
        "objective": info.objective_function_value + constant,
        "bound": (info.objective_function_value if how.get("relax") else info.mip_dual_bound)
        + constant,
        "nodes": 0 if how.get("relax") else info.mip_node_count,
        "values": values,
    }


def _region(name: str) -> str | None:
    """The region a column belongs to (None: a column of no single region)."""
    family, parts = split_name(name)
    if family in REGION_INDEX:
        return parts[REGION_INDEX[family]]
    if ModeLoadColumn.owns(family):
        return parts[2]
    return None


def _region_program(lp: LinearProgram, *regions: str) -> LinearProgram:
    """The regions' own program: their columns, the rows that mention only them, their
    costs."""
    own = {name for name in lp.variables if _region(name) in regions}
    sub = LinearProgram(f"{lp.name}@{'+'.join(regions)}")
    sub.variables = {name: lp.variables[name] for name in own}
    sub.constraints = {
        name: row for name, row in lp.constraints.items() if set(row.coefficients) <= own
    }
    sub.objective = {name: cost for name, cost in lp.objective.items() if name in own}
    return sub


def _with_region_rows(lp: LinearProgram, regions: tuple[str, ...]) -> tuple[LinearProgram, float]:
    """`lp` plus one row per region: its cost >= its own program's proven bound; and the
    CPU seconds those programs took."""
    copy = with_bounds(lp, {})
    cpu_s = 0.0
    for region in regions:
        sub = _region_program(lp, region)
        solved = _highs(sub)
        cpu_s += solved["cpu_s"]
        name = f"region_cost[{region}]"
        copy.constraints[name] = Constraint(
            name, "region_cost", dict(sub.objective), Sense.GE, solved["bound"]
        )
    return copy, cpu_s


def _with_pair_rows(lp: LinearProgram, regions: tuple[str, ...]) -> tuple[LinearProgram, float]:
    """`lp` plus one row per pair of regions: their cost >= their program's proven bound;
    and the CPU seconds those programs took."""
    copy = with_bounds(lp, {})
    cpu_s = 0.0
    for pair in itertools.combinations(regions, 2):
        sub = _region_program(lp, *pair)
        solved = _highs(sub)
        cpu_s += solved["cpu_s"]
        name = f"pair_cost[{','.join(pair)}]"
        copy.constraints[name] = Constraint(
            name, "pair_cost", dict(sub.objective), Sense.GE, solved["bound"]
        )
    return copy, cpu_s


def _with_price_rows(lp: LinearProgram, regions: tuple[str, ...]) -> tuple[LinearProgram, float]:
    """`lp` plus one Lagrangian row per region at the LP's prices on the demand rows its
    own program lacks; and the CPU seconds of the priced region programs."""
    duals = _highs(lp, relax=True)["duals"]
    copy = with_bounds(lp, {})
    cpu_s = 0.0
    for region in regions:
        sub = _region_program(lp, region)
        terms = dict(sub.objective)
        for name, row in lp.constraints.items():
            if row.family != "demand" or name in sub.constraints:
                continue
            for column, coefficient in row.coefficients.items():
                if column in sub.variables:
                    terms[column] = terms.get(column, 0.0) - duals[name] * coefficient
        priced = with_bounds(sub, {})
        priced.objective = terms
        solved = _highs(priced)
        cpu_s += solved["cpu_s"]
        name = f"price_cost[{region}]"
        copy.constraints[name] = Constraint(name, "price_cost", terms, Sense.GE, solved["bound"])
    return copy, cpu_s


def _region_hull(lp: LinearProgram, regions: tuple[str, ...], plan: dict[str, float]):
    """The Dantzig-Wolfe bound by region (the module docstring), from the columns of
    `plan` restricted to each region; and the CPU seconds of the priced programs. The
    bound is the best Lagrangian one met on the way, sum_rows y_d b_d plus each priced
    program's proven bound, valid at every step (the master's value is one only once
    nothing prices out)."""
    own = {region: _region_program(lp, region) for region in regions}
    coupling = {
        name: row
        for name, row in lp.constraints.items()
        if not any(name in program.constraints for program in own.values())
    }
    columns: dict[str, list[tuple[float, dict[str, float]]]] = {r: [] for r in regions}

    def add(region: str, values: dict[str, float]) -> None:
        program = own[region]
        cost = sum(c * values.get(name, 0.0) for name, c in program.objective.items())
        terms = {
            row_name: sum(
                c * values.get(name, 0.0)
                for name, c in row.coefficients.items()
                if name in program.variables
            )
            for row_name, row in coupling.items()
        }
        columns[region].append((cost, terms))

    for region in regions:
        add(region, plan)
    cpu_s, bound = 0.0, float("-inf")
    while True:
        master = LinearProgram("region_hull")
        for region in regions:
            for k, (cost, _) in enumerate(columns[region]):
                master.add_variable(f"take[{region},{k}]")
                master.objective[f"take[{region},{k}]"] = cost
        for name, row in coupling.items():
            terms = {
                f"take[{region},{k}]": share[name]
                for region in regions
                for k, (_, share) in enumerate(columns[region])
                if share[name]
            }
            master.constraints[name] = Constraint(name, "demand", terms, row.sense, row.rhs)
        for region in regions:
            name = f"one_plan[{region}]"
            terms = {f"take[{region},{k}]": 1.0 for k in range(len(columns[region]))}
            master.constraints[name] = Constraint(name, "one_plan", terms, Sense.EQ, 1.0)
        solved = _highs(master, relax=True)
        duals, priced_out = solved["duals"], False
        lagrangian = sum(duals[name] * row.rhs for name, row in coupling.items())
        for region in regions:
            program = own[region]
            priced = with_bounds(program, {})
            priced.objective = dict(program.objective)
            for name, row in coupling.items():
                for column, coefficient in row.coefficients.items():
                    if column in program.variables:
                        priced.objective[column] = (
                            priced.objective.get(column, 0.0) - duals[name] * coefficient
                        )
            best = _highs(priced)
            cpu_s += best["cpu_s"]
            lagrangian += best["bound"]
            if best["objective"] - duals[f"one_plan[{region}]"] < -1e-3:
                add(region, best["values"])
                priced_out = True
        bound = max(bound, lagrangian)
        if not priced_out:
            return bound, cpu_s


def _relaxed(lp: LinearProgram, family: str) -> LinearProgram:
    """`lp` with the integers of one column family continuous."""
    copy = with_bounds(lp, {})
    for name, var in lp.variables.items():
        if var.integer and split_name(name)[0] == family:
            copy.variables[name] = replace(var, integer=False)
    return copy


def _solve_seeds(lp: LinearProgram, seeds=SEEDS, **how) -> dict[str, float]:
    runs = [_highs(lp, seed, **how) for seed in seeds]
    return {
        "nodes": statistics.mean(run["nodes"] for run in runs),
        "cpu_s": statistics.mean(run["cpu_s"] for run in runs),
        "objective": min(run["objective"] for run in runs),
        "values": runs[0]["values"],
    }


@pytest.fixture(scope="module")
def program():
    instance = load_instance(INSTANCE_FOLDER / f"{INSTANCE}.yaml")
    settings = SolveSettings.of(instance)
    table = build_candidates(instance, settings)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    return build_program(instance, table, settings=settings, sets=sets)


def _row(label: str, lp_bound, root_bound, nodes, cpu_s, objective, extra: str = "") -> None:
    def money(value):
        return f"{value:>12,.0f}" if value is not None else f"{'':>12}"

    print(
        f"{label:26} {money(lp_bound)} {money(root_bound)} {nodes:>8.0f} {cpu_s:>8.2f} "
        f"{money(objective)} {extra}"
    )


def test_chat3region_where_the_time_goes(program):
    lp, regions = program.lp, program.sets.regions
    print(f"\n{INSTANCE}: whole program, HiGHS 1 thread, mean of seeds {SEEDS}")
    print(f"{'':26} {'LP bound':>12} {'after cuts':>12} {'nodes':>8} {'CPU s':>8} {'optimum':>12}")

    today = _solve_seeds(lp)
    relaxed = _highs(lp, relax=True)
    root = _highs(lp, root_only=True)
    _row(
        "today", relaxed["bound"], root["bound"], today["nodes"], today["cpu_s"], today["objective"]
    )

    proof = _solve_seeds(lp, start=today["values"])
    _row("from optimum", None, None, proof["nodes"], proof["cpu_s"], proof["objective"])
    assert proof["objective"] == pytest.approx(today["objective"], rel=2 * GAP)

    for family in RELAXED_FAMILIES:
        solved = _highs(_relaxed(lp, family))
        _row(
            f"{family} continuous",
            None,
            None,
            solved["nodes"],
            solved["cpu_s"],
            solved["objective"],
        )
        # A relaxation: never above the optimum (each within its gap).
        assert solved["objective"] <= today["objective"] * (1 + 2 * GAP)

    rows, region_cpu_s = _with_region_rows(lp, regions)
    tight = _solve_seeds(rows)
    tight_lp = _highs(rows, relax=True)
    tight_root = _highs(rows, root_only=True)
    _row(
        "region rows",
        tight_lp["bound"],
        tight_root["bound"],
        tight["nodes"],
        tight["cpu_s"],
        tight["objective"],
        f"(+ {region_cpu_s:.2f} s for the {len(regions)} region programs)",
    )
    print(
        f"{'ratio':26} {tight_lp['bound'] / relaxed['bound']:>12.4f} "
        f"{tight_root['bound'] / root['bound']:>12.4f} "
        f"{tight['nodes'] / max(today['nodes'], 1):>8.2f} "
        f"{(tight['cpu_s'] + region_cpu_s) / today['cpu_s']:>8.2f}"
    )
    # Valid rows remove no plan: the optima agree within the gap (1e-3 each side).
    assert tight["objective"] == pytest.approx(today["objective"], rel=2 * GAP)
    assert tight_lp["bound"] >= relaxed["bound"] - 1e-6 * relaxed["bound"]

    for label, tried in (("pair rows", _with_pair_rows), ("price rows", _with_price_rows)):
        more, more_cpu_s = tried(rows, regions)
        solved = _solve_seeds(more, TRIED_SEEDS)
        more_lp = _highs(more, relax=True)
        _row(
            label,
            more_lp["bound"],
            _highs(more, root_only=True)["bound"],
            solved["nodes"],
            solved["cpu_s"],
            solved["objective"],
            f"(+ {region_cpu_s + more_cpu_s:.2f} s for the region and {label[:-5]} programs)",
        )
        # valid rows: the same optimum, and an LP bound no lower than the region rows'
        assert solved["objective"] == pytest.approx(today["objective"], rel=2 * GAP)
        assert more_lp["bound"] >= tight_lp["bound"] - 1e-6 * tight_lp["bound"]

    hull, hull_cpu_s = _region_hull(lp, regions, today["values"])
    _row("region hull", hull, None, 0, hull_cpu_s, None, "(Dantzig-Wolfe bound by region)")
    # a valid bound: never above the optimum; each region's hull holds its row, so no
    # lower than the region rows' LP bound (each priced program proven within GAP)
    assert tight_lp["bound"] * (1 - 2 * GAP) <= hull <= today["objective"] * (1 + 1e-6)
