"""An `allow GPU` lever proven by its branch that uses the new types alone, against the
lever's own solve from the base plan (issue 33: chat-3region's `explain --levers` under
30 s). Run by `make bench` only (not `make test`); nothing in the solver uses the branch:
this bench is the measurement that kept it out (levers15).

The argument (exact). A GPU lever's program P_g is the base program P plus the columns of
its types (their pools, purchases, servers) in the rows they enter. Its integer plans
split in two: A, every replica of a new type at 0, and B, their sum at least 1 (replicas
are integers >= 0, so every plan is in one of them). A's plans are, on P's columns, plans
of P (on chat-3region's programs: the rows of P a new column enters are capacity rows,
its replicas and their pooled steps, 0 with them, and configs_per_pool, whose pool_used
only tightens them; its purchases only cost), so

    opt(P_g) = min(opt(A), opt(B))  >=  min(L_P, opt(B)),

L_P the lower bound the base solve proved (its tie-break per GPU is larger than P_g's:
below $1/month in all). B is solved with the cutoff row objective <= c, c = the base
plan's objective in P_g x (1 - gap): where B is then infeasible, opt(B) > c and the base
plan is within the gap of P_g's optimum; where B finds a plan below c, that plan is the
lever's, proven to min(L_P, B's bound). The branch leaves out every plan of the base's
program, whose search the lever's own solve repeats: the hope was a much shorter proof.

Measured (levers15, chat-3region, one solver thread, the branch B with the pools
config dominance removes, the size rows, the lever program's region rows; load average
8 to 13 on 2 cores, so read the ratios): this bench's run, gh200's B infeasible in
89.2 s against the lever's solve proven in 60.9 s; the seven neutral types (a100, h800,
l40s, b300, rtx-pro-6000, gb200, gb300) at once, 90.9 s against 43.1 s (zipf-20-models,
whose levers are small: 0.0 s against 0.4 s). Run alone on the whole program from the
base plan (HiGHS, no pipeline): the group's B 53.0 s against 25.3 s, gh200's 56.7 s
against 55.2 s; with HiGHS's `objective_bound` in place of the row, 41.1 s against
46.6 s and 83.0 s against 81.0 s. The hard part of these proofs is the branch that
uses the new types (gh200's one-GPU servers round a fleet up in many more ways), not the
base's part: the branch is no shorter, and the lever keeps its own solve. (HiGHS 1.16's
`objective_bound` is no cutoff here: it returned plans above it.)

Printed: each lever's two times and outcomes. Asserted: exactness only, never time: where
B is infeasible and the lever's solve is proven, its objective is at least
min(L_P, c) less $1 (the tie-break); where B has a proven plan, the lever's optimum is
within its gap of it.
"""

import time
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from solver.analysis.lever_edits import allow_gpu
from solver.analysis.lever_programs import static_fleet_program
from solver.backends import get_backend
from solver.candidates.replica_dominance import with_sizes
from solver.candidates.swap_dominance import optimal_reduction
from solver.decompose.region_bounds import bound_of, with_region_rows
from solver.program.build import with_bounds
from solver.program.lp import LinearProgram, Sense, Termination
from solver.program.row_names import ReplicasColumn, family_of
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.stages import candidate_table
from tests.paths import INSTANCES

LIMIT_S = 120.0
"""Each solve's time limit (the branch's, the lever's)."""
TIE_BREAK = 1.0
"""$/month the tie-break per GPU may move an objective (below $1 in all)."""
BENCH = (
    ("chat-3region", ("gh200",)),
    ("chat-3region", ("a100-80gb-sxm", "h800", "l40s", "b300", "rtx-pro-6000", "gb200", "gb300")),
    ("zipf-20-models", ("gh200",)),
    ("zipf-20-models", ("mi300x",)),
)


def branch(lp: LinearProgram, base: LinearProgram, cutoff: float) -> LinearProgram:
    """B of the module text: `lp` with its new types' replicas summing to at least 1 and
    its objective at most `cutoff`."""
    new = {
        name: 1.0
        for name, var in lp.variables.items()
        if name not in base.variables
        and family_of(name) == ReplicasColumn.family
        and (var.upper is None or var.upper > 0)
    }
    copy = with_bounds(lp, {})
    copy.add_constraint("branch[new types]", "branch", new, Sense.GE, 1.0)
    rhs = cutoff - lp.objective_constant
    copy.add_constraint("cutoff[base]", "cutoff", dict(lp.objective), Sense.LE, rhs)
    return copy


@pytest.mark.parametrize(("name", "offered"), BENCH)
def test_branch_against_the_levers_solve(name, offered):
    instance = load_instance(INSTANCES / f"{name}.yaml")
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base_lp, gap = solved.program.lp, instance.solver.mip_gap
    base_bound = bound_of(solved.result, base_lp, solved.settings)
    lever = instance
    for gpu in offered:
        lever = allow_gpu(gpu)(lever) or lever
    settings = SolveSettings.of(lever, threads=1, time_limit_s=LIMIT_S).started()
    table = candidate_table(lever, settings)
    program = static_fleet_program(lever, table, settings)
    at_base = program.lp.objective_value(solved.start)
    cutoff = at_base * (1 - gap)

    began = time.perf_counter()
    reduction = optimal_reduction(program, None, configs=True)  # P_g's optimum kept
    reduced = with_sizes(with_bounds(program.lp, reduction.bounds), reduction.sizes)
    backend = get_backend("highs")
    rows = with_region_rows(branch(reduced, base_lp, cutoff), backend, settings, program.lp)
    found = backend.solve(rows, time_limit_s=LIMIT_S, mip_gap=gap, threads=1)
    branch_s = time.perf_counter() - began

    began = time.perf_counter()
    own = replace(SolveSettings.of(lever, threads=1, time_limit_s=LIMIT_S), start=solved.start)
    own = replace(own, dominated_with_start=len(offered) > 1)  # as solve_group, solve_lever
    whole = solve_program(lever, own, table, program)  # built once, as solve_lever does
    whole_s = time.perf_counter() - began

    result = whole.result
    print(
        f"\n{name} + {', '.join(offered)}: base objective {at_base:,.2f}, bound {base_bound:,.2f}"
        f"\n  branch: {found.termination} {found.objective} in {branch_s:.1f} s"
        f"\n  lever:  {result.termination} {result.objective} (gap {result.mip_gap}) in"
        f" {whole_s:.1f} s"
    )
    proven = result.termination is Termination.OPTIMAL and base_bound is not None
    if proven and found.termination is Termination.INFEASIBLE:
        assert result.objective >= min(base_bound, cutoff) - TIE_BREAK
    if proven and found.termination is Termination.OPTIMAL:
        assert result.objective * (1 - gap) <= found.objective + TIE_BREAK
