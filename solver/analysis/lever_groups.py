"""GPU levers that save nothing, proven together: one program with every such GPU type
offered at once instead of one program per type.

Each `allow GPU` lever only adds options: its program P_g is the base program P plus the
columns of type g (its pools, purchases, servers) in the rows they enter, so the base
plan x* is a plan of P_g. Offer a set G of such types at once: P_G. Where every plan x
of P_g, with G's other columns at 0, is a plan of P_G at no greater objective, and x* a
plan of P_g at no greater objective than in P (`contains`, checked for every member:
the same rows on the smaller program's columns, bounds no tighter, costs no higher; the
objective's tie-break on GPUs used, epsilon = 1 / (1 + every GPU that could exist),
only shrinks as types are added),

    L_G  <=  opt(P_G)  <=  opt(P_g)      and      obj_g(x*)  <=  obj_P(x*) = b,

L_G the proven lower bound of P_G's solve. The gap of x* in P_g, (obj_g(x*) - opt(P_g))
/ obj_g(x*), grows with obj_g(x*) and shrinks with opt(P_g), so it is at most
(b - L_G) / b. Where that is within the requested gap, the base plan is proven within
the gap for every lever of G: each answers with it, status solved, without a solve of
its own (`solve_group`); or with P_G's own plan x_G where that is a plan of P_g
(`plan_of`: it uses no other type of G) with obj_g(x_G) <= obj_g(x*), its gap
(obj_g(x_G) - L_G) / obj_g(x_G) by the same bound (an equal-cost plan with fewer GPUs,
as the lever's own solve would find by the tie-break). Where P_G's solve finds a plan
below the base (some type of G saves), or none, nothing is concluded and each lever of
G is solved alone, as without the group.

Which levers join is a choice of speed only (the argument above is what makes an
answer): a lever whose program, relaxed but for its whole servers (`servers_bound`: a
few integers, 0.1-0.4 s), is no cheaper than the base program so relaxed (`neutral`: a
type it uses would likely end the group's proof with a cheaper plan; the LP relaxation
alone cannot tell, as it buys fractions of gb200's 72-GPU racks), and whose type's
server is no finer than every type on offer (`groupable`: a finer server, gh200's one
GPU, makes whole-server rounding pay off in more ways, and its proof dominated the
group's). On chat-3region six of the ten types are neutral (a100, l40s, b300,
rtx-pro-6000, gb200, gb300): together 16.8 s against 28.3 s alone; the seven with gh200
took 47 s together, the sum of their solves alone. Only static plans proven within the
gap group; under the levers' one deadline the group gets its members' shares at once
(solver.analysis.lever_shares).
"""

import math
from dataclasses import dataclass, replace
from typing import Any

from models.schema.instance import Instance
from solver.analysis.lever_edits import allow_gpu
from solver.analysis.lever_programs import BaseProgram, plan_fields
from solver.backends import get_backend
from solver.backends.base import relative_gap
from solver.decompose.region_bounds import bound_of
from solver.errors import Infeasible, NoSolution, PlanRejected
from solver.program.build import with_bounds
from solver.program.families.servers import ServersColumn
from solver.program.lp import LinearProgram, Sense, SolveResult, plan_of
from solver.program.row_names import split_name
from solver.settings import SolveSettings
from solver.solve import solve_program

GROUPS = True
"""Whether levers are proven in groups at all (`groups_in`); off, the bench's `before`
(tests/bench/test_levers_speed.py)."""
MIN_INTEGERS = 200
"""Integer columns of the base program below which its levers are solved alone (and
search with every pool: solver.analysis.levers.DOMINATED): each
solves in well under a second, and the screens would cost as much as the group saves
(on the 15 smaller static instances in instances/, 0.2-2.5 s of levers in all, the
group took -0.3 to +0.7 s; chat-3region, 574 integers, saves 10 s)."""
SCREEN_GAP = 1e-4
"""The gap `servers_bound` is solved to."""
NEUTRAL_SHARE = 2 * SCREEN_GAP
"""How much lower than the base program's `servers_bound` a lever's may be and still
count as finding no use for its GPU type (`neutral`)."""
GAP_MARGIN = 1e-3
"""The group is solved to the requested gap less this share of it: its gap is measured
at its own objective of the base plan, the members' at theirs, higher by the tie-break
(a few cents), so the members' stay within the requested gap."""
DOMINATED = True
"""Whether the group's search leaves out the pools config dominance removes, from the
base plan too (`SolveSettings.dominated_with_start`); off, the bench's before."""
CENT = 0.01
"""A group plan dearer than the base's less this found no saving."""
GROUP_NOTE = "proven with {others} offered at once: none saves within the gap"
"""The note of a lever answered by its group (`solve_group`), proven within the gap."""
STOPPED_NOTE = "searched with {others} offered at once until its time limit: none saved by then"
"""The note of a lever its group answered stopped by its time limit (status feasible, its
gap the group's bound's): not proven, so not said to be."""


@dataclass(frozen=True)
class Neutral:
    """A GPU lever whose program relaxed but for whole servers finds no use for its type
    (`neutral`): to be proven with others (`solve_group`) rather than alone. `lp`: its
    program, as built."""

    lever: str
    offers: str
    lp: LinearProgram


@dataclass(frozen=True)
class GroupWork:
    """GPU levers to prove together (`solve_group`)."""

    members: tuple[Neutral, ...]


@dataclass(frozen=True)
class GroupAnswer:
    """A lever's answer from its group: the plan it ends on (`fields`: the group's plan's
    `plan_fields` where that is a plan of the lever's program no dearer there than the
    base plan; None: the base plan), its cost, the gap it is proven to (None: within the
    requested gap; else the group stopped by its time limit: status feasible), its note."""

    cost_per_month: float
    gap: float | None
    note: str
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class GroupOutcome:
    """What a group's solve concluded: the levers it answers, and those left to be
    solved alone (all of them where it proved nothing)."""

    answered: dict[str, GroupAnswer]
    unanswered: tuple[str, ...]


def servers_bound(
    lp: LinearProgram, backend: str | None, start: dict[str, float] | None = None
) -> float | None:
    """The optimum (within `SCREEN_GAP`) of `lp` with every integer but the whole servers
    bought (`servers` columns) made continuous: a small program of a few integers; None
    without a plan (`servers_screen`)."""
    result = servers_screen(lp, backend, start)
    return result.objective if result.termination.has_solution else None


def servers_screen(
    lp: LinearProgram, backend: str | None, start: dict[str, float] | None = None
) -> SolveResult:
    """`servers_bound`'s solve, from `start` where given: the base program's own screen's
    plan, with a lever's columns at 0 a plan of the lever's screen (it only adds columns),
    so the search has the base's bound in hand as an incumbent from its first node
    (chat-3region's seven neutral probes 2.8 -> 1.8 CPU s); the optimum is the same."""
    relaxed = with_bounds(lp, {}, relax=True)
    for name, var in lp.variables.items():
        if var.integer and split_name(name)[0] == ServersColumn.family:
            relaxed.variables[name] = var
    return get_backend(backend or "highs").solve(
        relaxed, mip_gap=SCREEN_GAP, threads=1, want_duals=False, start=start
    )


def neutral(
    lp: LinearProgram, base_bound: float, backend: str | None, start: dict | None = None
) -> bool:
    """Whether `lp`'s `servers_bound` (from `start`, the base's screen's plan) is no lower
    than the base program's (`base_bound`) by more than `NEUTRAL_SHARE` of it (the
    tie-break and the screen's gap move it a little)."""
    bound = servers_bound(lp, backend, start)
    return bound is not None and bound >= base_bound - NEUTRAL_SHARE * abs(base_bound)


def groups_in(
    instance: Instance, program: LinearProgram, start: object, base: BaseProgram | None
) -> bool:
    """Whether the levers of `instance` may be proven in groups: a static plan proven
    within the gap (`base`), a start (the base plan's values), one program to solve (no
    warm/cold split to choose: policy.warm_cold_split), a gap above 0 (with none, only a
    program's own solve tells its tie-break among equal costs), and a base `program` of
    `MIN_INTEGERS` or more."""
    if not GROUPS or base is None or start is None or instance.solver.mip_gap <= 0:
        return False
    return not instance.policy.warm_cold_split and large(program)


def large(program: LinearProgram | None) -> bool:
    """Whether `program` has `MIN_INTEGERS` integer columns or more (below, its levers
    solve in well under a second each: neither grouped nor searched reduced)."""
    if program is None:
        return False
    return sum(var.integer for var in program.variables.values()) >= MIN_INTEGERS


def groupable(base: Instance, offers: str | None, changed: Instance) -> bool:
    """Whether a lever offering the GPU type `offers` may join a group: its server holds
    no fewer GPUs than the finest server on offer (the module text)."""
    if offers is None:
        return False
    finest = min(spec.gpus_per_node for spec in base.gpu_specs.values())
    return changed.gpu_specs[offers].gpus_per_node >= finest


def probes_early(work: list, probing: set[str]) -> list:
    """`work` (levers, by `name`) with those to probe moved up to the first of them, in
    their order: the levers before them (the longest) keep their place, the group the
    probes make starts early and does not run alone at the end."""
    first = next((i for i, item in enumerate(work) if item.name in probing), len(work))
    probes = [item for item in work if item.name in probing]
    rest = [item for item in work[first:] if item.name not in probing]
    return [*work[:first], *probes, *rest]


def contains(outer: LinearProgram, inner: LinearProgram) -> bool:
    """Whether every plan of `inner`, with `outer`'s other columns at 0, is a plan of
    `outer` at no greater objective: every column of `inner` in `outer` with bounds no
    tighter, an integer only where `inner`'s is, a cost no higher (equal where the
    column may be negative); every other column of `outer` may be 0; every row of
    `outer` is `inner`'s row of that name on `inner`'s columns with a right-hand side no
    tighter, or holds for every value of `inner`'s columns within their bounds (a row
    of the other columns only, or one that the bounds imply); the same constant."""
    if outer.objective_constant != inner.objective_constant:
        return False
    for name, mine in inner.variables.items():
        theirs = outer.variables.get(name)
        if theirs is None or theirs.lower > mine.lower or (theirs.integer and not mine.integer):
            return False
        if theirs.upper is not None and (mine.upper is None or mine.upper > theirs.upper):
            return False
        price, own = outer.objective.get(name, 0.0), inner.objective.get(name, 0.0)
        if price > own or (price != own and mine.lower < 0):
            return False
    for name, var in outer.variables.items():
        zero_outside = var.lower <= 0 and (var.upper is None or var.upper >= 0)
        if name not in inner.variables and not zero_outside:
            return False
    for name, row in outer.constraints.items():
        on_inner = {c: a for c, a in row.coefficients.items() if c in inner.variables}
        mine = inner.constraints.get(name)
        if mine is None:
            same = _holds_within_bounds(on_inner, row.sense, row.rhs, inner)
        else:
            same = on_inner == mine.coefficients and row.sense == mine.sense
            same = same and _no_tighter(row.sense, row.rhs, mine.rhs)
        if not same:
            return False
    return True


def _holds_within_bounds(
    terms: dict[str, float], sense: Sense, rhs: float, lp: LinearProgram
) -> bool:
    """Whether the row sum(terms) SENSE rhs holds for every value of `lp`'s columns within
    their bounds (e.g. pool_used[c] <= 1 of one binary column): its least and largest
    activity over the bounds."""
    least = most = 0.0
    for name, coef in terms.items():
        var = lp.variables[name]
        upper = math.inf if var.upper is None else var.upper
        ends = (coef * var.lower, coef * upper)
        least += min(ends)
        most += max(ends)
    return {Sense.GE: least >= rhs, Sense.LE: most <= rhs, Sense.EQ: least == most == rhs}[sense]


def _no_tighter(sense: Sense, outer_rhs: float, inner_rhs: float) -> bool:
    return {
        Sense.GE: outer_rhs <= inner_rhs,
        Sense.LE: outer_rhs >= inner_rhs,
        Sense.EQ: outer_rhs == inner_rhs,
    }[sense]


def solve_group(
    members: tuple[Neutral, ...],
    instance: Instance,
    base_cost: float,
    backend: str | None,
    start: dict[str, float],
    base_lp: LinearProgram,
    time_limit_s: float | None = None,
    handed_out: float | None = None,
) -> GroupOutcome:
    """P_G, the base `instance` with every member's type offered, solved with one solver
    thread from the base plan (`start`, a plan of the base program `base_lp`) within the
    sum of its members' time limits (it stands in for their solves: `time_limit_s`, their
    shares of the levers' deadline counted from `handed_out`, or, where none is given,
    the instance's limit each); the members it
    contains answered with the base plan (the module text), every other member, and
    every one where it found a cheaper plan or none, left to be solved alone. Stopped
    by its limit, its bound still holds for every member: they answer with the base
    plan, status feasible, at the gap it proves (as each alone would, stopped)."""
    names = tuple(member.lever for member in members)
    grouped = instance
    for member in members:
        grouped = allow_gpu(member.offers)(grouped) or grouped
    limit_s = time_limit_s
    if limit_s is None and instance.solver.time_limit_s is not None:
        limit_s = instance.solver.time_limit_s * len(members)
    settings = SolveSettings.of(grouped, backend=backend, threads=1, time_limit_s=limit_s)
    requested = settings.mip_gap
    settings = replace(settings, start=start, mip_gap=requested * (1 - GAP_MARGIN))
    settings = replace(settings, dominated_with_start=DOMINATED)
    settings = settings.started(handed_out)
    try:
        solved = solve_program(grouped, settings)
    except (Infeasible, NoSolution, PlanRejected):
        return GroupOutcome({}, names)
    lp, result, plan = solved.program.lp, solved.result, solved.plan
    bound = bound_of(result, lp, settings)
    if bound is None and result.objective is not None and result.mip_gap is not None:
        bound = result.objective - result.mip_gap * abs(result.objective)  # stopped
    cost = plan.cost_per_month
    if bound is None or cost is None or cost < base_cost - CENT:
        return GroupOutcome({}, names)
    others = ", ".join(m.offers for m in members)
    answered = {}
    for member in members:
        if not (contains(lp, member.lp) and contains(member.lp, base_lp)):
            continue
        at_base = member.lp.objective_value(start)
        found = member.lp.objective_value(result.values)
        if plan_of(member.lp, result.values) and found <= at_base:
            gap = relative_gap(found, bound)
            answer = GroupAnswer(cost, gap, "", plan_fields(plan))
        else:
            answer = GroupAnswer(base_cost, relative_gap(at_base, bound), "")
        if answer.gap is not None:
            proven = answer.gap <= requested + 1e-12
            note = (GROUP_NOTE if proven else STOPPED_NOTE).format(others=others)
            answered[member.lever] = replace(answer, gap=None if proven else answer.gap, note=note)
    unanswered = tuple(m.lever for m in members if m.lever not in answered)
    return GroupOutcome(answered, unanswered)
