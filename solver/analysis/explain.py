"""Why the plan is what it is.

- Binding constraints with shadow prices (solver.readback.pricing: the LP with the plan's
  discrete choices fixed and replica counts relaxed; not MIP duals).
- Utilisation of every phase of every workload in every region, in every scenario.
- The limiting factor of each chosen configuration, with the performance model's numbers
  for a pool of its real size behind one router.
- What each chosen pool's best alternative would cost: the program is re-solved with
  that configuration excluded from that region (replicas fixed at 0), and the cost
  difference and what took its place are reported. A re-solve, not a re-pricing: the
  runner-up is whatever the optimiser picks once the pool is gone, failover included.
  Candidates pruned only because the pool's configuration dominated them are back in
  that re-solve, in the pool's region (solver.analysis.without.program_without), so it
  is the optimum of the instance without the pool there, not of the pruned table.
  An hourly plan re-solves its periods program with the configuration's replicas at 0
  in every period (solver.time.alternatives); its utilisation, limits and slack are its
  peak period's.
- Slack of every reported constraint family at the plan.

The re-solves (one per chosen pool, and the one that prices the limit on configurations
per pool: an hourly plan's re-solves its periods program with the limit lifted in every
period, solver.time.alternatives) are independent: they run side by side in worker
processes, one solver thread each (solver.decompose.parallel), and each one finished is
reported to `progress` (the command writes it on stderr once the explanation has taken a
couple of seconds).
"""

import math
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from functools import partial

from pydantic import BaseModel, ConfigDict

from models.schema.instance import Instance
from models.schema.quantities import counted
from models.serving.replica import Limit
from solver.analysis import without
from solver.analysis.capacity_report import GpuCountRouting, gpu_count_routing
from solver.analysis.lever_solve import LeverResult
from solver.analysis.without import (
    BaseProof,
    program_without,
    start_without,
    with_base_bound,
)
from solver.backends import get_backend
from solver.candidates.table import CandidateTable
from solver.decompose.by_workload import optimise
from solver.decompose.parallel import processes_for, worth_parallel
from solver.decompose.scenario_cuts import solve_by_cuts
from solver.plan.records import Binding, MaybeMoney, Money, SimplicityCost
from solver.plan.schema import Plan
from solver.program.build import FleetProgram, with_bounds
from solver.program.families import FAMILIES
from solver.program.lp import Sense, SolveResult, Termination
from solver.program.row_names import ReplicasColumn
from solver.readback.assign import gpu_use, integral, replica_counts
from solver.readback.groups import group_gpus
from solver.readback.pricing import is_idle, is_tight
from solver.settings import SolveSettings, TimeLimitReached, machine_threads
from solver.simulate.effects import PoolEffects
from solver.solve import Solved, simplicity_cost, solve_program
from solver.workers import process_pool

Progress = Callable[[str], None]
"""Called with one line each time a re-solve ends (e.g. `alternative 3 of 8: ...`)."""

MAX_ALTERNATIVES = 40
"""Pools beyond this many are not re-solved one by one (explain stays interactive)."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class Utilisation(BaseModel):
    """Load against capacity of one phase in one scenario."""

    model_config = _FROZEN

    scenario: str
    workload: str
    region: str
    phase: str
    load_requests_per_s: float
    capacity_requests_per_s: float
    utilisation: float


class LimitNote(BaseModel):
    """What limits one chosen configuration, in the performance model's words."""

    model_config = _FROZEN

    workload: str
    region: str
    configuration: str
    count: int
    requests_per_s_per_replica: float
    limit: Limit
    reason: str


class Alternative(BaseModel):
    """The cost of doing without one chosen pool."""

    model_config = _FROZEN

    workload: str
    region: str
    configuration: str
    count: int
    cost_without_per_month: MaybeMoney
    """Optimal cost with the configuration excluded from the region (None: no plan)."""
    extra_cost_per_month: MaybeMoney
    replaced_by: tuple[str, ...]
    """Pools of the workload in the region in the re-solved plan, as `count x label`."""


class FamilySlack(BaseModel):
    """How tight one constraint family is at the plan."""

    model_config = _FROZEN

    family: str
    description: str
    unit: str
    rows: int
    tight_rows: int
    min_slack: float


class Explanation(BaseModel):
    """The plan with the reasons behind it."""

    model_config = _FROZEN

    instance: str
    status: str
    """The plan's status: "optimal", or "feasible (gap X%)" (solver.plan.schema.plan_status)."""
    mip_gap: float | None = None
    """The gap in `status` as a number (the plan's solver.mip_gap), for machine readers."""
    cost_per_month: Money
    binding: tuple[Binding, ...]
    shadow_price_note: str
    utilisation: tuple[Utilisation, ...]
    limits: tuple[LimitNote, ...]
    alternatives: tuple[Alternative, ...]
    alternative_method: str
    families: tuple[FamilySlack, ...]
    plan: Plan
    levers: tuple[LeverResult, ...] = ()
    """Levers ranked by dollars (`solver.analysis.levers`), when asked for."""
    gpu_count_routing: tuple[GpuCountRouting, ...] = ()
    """Pools of one workload and region on several configurations, routed by GPU count
    instead of by capacity (solver.analysis.capacity_report): what the slower pool's p99 becomes."""
    engine_effects: tuple[PoolEffects, ...] = ()
    """Per simulated pool, which engine effects (batching, preemption, chunked-prefill
    interference, head-of-line blocking) bind its p99 (solver.simulate.effects: a short
    fixed-seed replay, each effect switched off in turn)."""
    engine_effects_method: str = ""


ALTERNATIVE_METHOD = (
    "re-solve with the configuration excluded from the region (its replicas fixed at 0), "
    "same backend and failure policy, to within a 1% gap (solver.settings.COMPARISON_GAP)"
)
HOURLY_ALTERNATIVE_METHOD = (
    "re-solve of the periods program with the configuration's replicas fixed at 0 in the "
    "region in every period of the day (commitments, batch, spot and failover starts chosen "
    "again; a plan with months: month 0's program), same backend, to within a 1% gap "
    "(solver.time.alternatives)"
)
ALTERNATIVES_TIME_SHARE = 0.8
"""Share of the time left that explain's alternative re-solves take, split evenly over
the pools still to re-solve; the rest keeps room for what the limit on configurations
per pool costs and for rendering, so that explain answers within its time limit."""
PARALLEL_MIN_LEFT_S = 20.0
"""Time left below which the re-solves run in this process: starting worker processes
(an interpreter and the solver library each, seconds on a loaded machine) would eat the
shares of a tight deadline."""
NOT_RESOLVED = "not re-solved: the time limit passed before its turn"
"""An alternative the deadline left out: the re-solves stop starting once the deadline
has passed, and the explanation keeps the ones done (a re-solve that ended 0.1 s past a
120 s limit threw away the whole explanation of a proven plan, exit 4)."""
UNPROVEN_ALTERNATIVE = "(not proven within its share of the time limit: the cost is an upper bound)"
ALTERNATIVES_SKIPPED = (
    "skipped: the plan is {status}, not proven optimal, so a re-solve without a pool "
    "may cost less than the plan itself and the difference means nothing"
)


def explain(
    instance: Instance, settings: SolveSettings | None = None, progress: Progress | None = None
) -> Explanation:
    """Solve the instance and explain the plan.

    Raises:
        Infeasible, NoSolution: as `solver.solve.solve`.
    """
    return explain_solved(solve_program(instance, settings), progress)


def explain_solved(solved: Solved, progress: Progress | None = None, busy: int = 0) -> Explanation:
    """The explanation of an already solved program, within the run's deadline.

    A plan that is not proven optimal (`Plan.optimal`) gets no alternatives: its cost is
    only an upper bound, so "extra $/month without this pool" could be negative.

    Args:
        solved: The solved program (solver.solve.solve_program).
        progress: Told of each re-solve as it ends; None: nothing is told.
        busy: Worker processes already solving beside (`explain --levers`: the levers'):
            the re-solves take only the cores left (at least this process).

    Past the deadline no further re-solve starts: the pools left out say so
    (`NOT_RESOLVED`), and the plan and the re-solves done are kept, as a solve keeps a
    plan read back past the limit.
    """
    plan = solved.plan
    alternatives: tuple[Alternative, ...] = ()
    if plan.optimal:
        alternatives, simplicity = _resolves(solved, progress or (lambda _line: None), busy)
        if plan.simplicity is None:
            plan = plan.model_copy(update={"simplicity": simplicity})
    return Explanation(
        instance=plan.instance,
        status=plan.status,
        mip_gap=None if plan.solver is None else plan.solver.mip_gap,
        cost_per_month=plan.cost_per_month or 0.0,
        binding=plan.binding,
        shadow_price_note=plan.shadow_price_note,
        utilisation=tuple(
            Utilisation(
                scenario=scenario.name,
                workload=row.workload,
                region=row.region,
                phase=row.phase,
                load_requests_per_s=row.load_requests_per_s,
                capacity_requests_per_s=row.capacity_requests_per_s,
                utilisation=row.utilisation,
            )
            for scenario in plan.scenarios
            for row in scenario.pools
        ),
        limits=_limits(solved),
        alternatives=alternatives,
        alternative_method=(
            ALTERNATIVE_METHOD if solved.time_step is None else HOURLY_ALTERNATIVE_METHOD
        )
        if plan.optimal
        else ALTERNATIVES_SKIPPED.format(status=plan.status),
        families=_family_slack(solved),
        plan=plan,
        gpu_count_routing=gpu_count_routing(solved.program.sets.instance, plan),
        **_engine_effects(solved.instance, plan, solved.settings),
    )


EFFECTS_PAST_DEADLINE = "not simulated: the time limit had passed when the re-solves ended"
EFFECTS_CUT = "; not simulated, the time limit passed first: {pools}"
"""What the method adds for the pools the deadline left out of the replay."""


def _engine_effects(instance: Instance, plan: Plan, settings: SolveSettings) -> dict:
    """The engine effects of the plan's pools at its load, or nothing for a plan the
    simulator cannot replay; `instance` is the one the plan answers (`Solved.instance`),
    as `simulate` replays it (an hourly plan's program holds its peak period's workloads
    only, so the batch the replayed hour soaks was left out of the replay). Within the
    run's deadline (five replays of 120 s of arrivals per pool: seconds to a minute): not
    started past it, and a pool whose turn, or whose next run, comes past it is not
    replayed and is named in the method (`EFFECTS_CUT`), so the deadline is passed by at
    most one run of one pool."""
    deadline = settings.deadline
    if deadline is not None and deadline.expired():
        return {"engine_effects": (), "engine_effects_method": EFFECTS_PAST_DEADLINE}
    from solver.simulate.effects import (
        BIND_SHARE,
        EXPLAIN_DURATION_S,
        EXPLAIN_SEED,
        effects_until,
    )
    from solver.simulate.replay_size import ReplayTooLarge

    try:
        rows, left_out = effects_until(
            instance, plan, None if deadline is None else deadline.expired
        )
    except ReplayTooLarge as error:
        return {"engine_effects": (), "engine_effects_method": f"not simulated: {error}"}
    except ValueError:
        return {}
    return {
        "engine_effects": rows,
        "engine_effects_method": (
            f"simulated {EXPLAIN_DURATION_S:g} s of arrivals per pool at the plan's load "
            f"(scenario none, seed {EXPLAIN_SEED}), once with every effect on and once "
            "with each off; an effect binds when switching it off lowers the pool's p99 "
            f"by {BIND_SHARE:.0%} or more"
            + (EFFECTS_CUT.format(pools=", ".join(left_out)) if left_out else "")
        ),
    }


def _limits(solved: Solved) -> tuple[LimitNote, ...]:
    notes = []
    for pool in solved.plan.replicas:
        if pool.shared:
            continue  # a shared group: its limit is in the plan entry (solver.colocation.groups)
        curve = solved.curves.get((pool.workload, pool.key))
        if curve is None:
            continue  # an hourly plan's batch pool: its own columns, no interactive curve
        physics = curve.physics(pool.count)  # in a pool of its real size
        notes.append(
            LimitNote(
                workload=pool.workload,
                region=pool.region,
                configuration=pool.label,
                count=pool.count,
                requests_per_s_per_replica=physics.requests_per_s,
                limit=physics.limit,
                reason=physics.reason,
            )
        )
    return tuple(notes)


def _resolves(
    solved: Solved, progress: Progress, busy: int = 0
) -> tuple[tuple[Alternative, ...], SimplicityCost | None]:
    """Every chosen pool's alternative and what the limit on configurations costs, the
    re-solves side by side in worker processes (one solver thread each) when there are
    several and a second core not `busy`, else one after the other here."""
    program, plan = solved.program, solved.plan
    comparison = solved.settings.for_comparison()
    step = solved.time_step
    if step is None:
        pools = [p for p in plan.replicas if not p.shared][:MAX_ALTERNATIVES]
        keys = [program.sets.table.find(p.workload, p.key).key for p in pools]
        names = [
            ReplicasColumn(p.workload, k, p.region).name() for p, k in zip(pools, keys, strict=True)
        ]
        run, lp = _resolve_without, program.lp
        base = BaseProof.of(program, solved.result, solved.settings)
        args = [
            (program_without(program, p.workload, k, p.region, solved.settings), (name, base))
            for p, k, name in zip(pools, keys, names, strict=True)
        ]
    else:  # an hourly plan: the periods program without the pool in every period
        bounds = step.without_pools(plan.replicas)[:MAX_ALTERNATIVES]
        pools = [p for p, _ in bounds]
        run, lp = step.resolver, step.lp
        args = [own_bounds for _, own_bounds in bounds]
    limit = program.sets.instance.policy.max_configs_per_pool
    # an hourly plan without a limit sends no periods program to a worker for nothing
    wants_simplicity = plan.simplicity is None and (step is None or limit is not None)
    started = solved.result if without.FROM_BASE else None  # the limit priced from the base
    lifted = (  # the limit on configurations per pool lifted: `lifted(settings)`
        partial(_simplicity, program, plan, table=program.sets.table, base=started)
        if step is None
        else partial(step.simplicity_resolver, step.program, plan)
    )
    jobs = len(pools) + wants_simplicity
    processes = processes_for(jobs) if worth_parallel([lp] * jobs) else 1
    processes = max(min(processes, machine_threads() - busy), 1)
    left = solved.settings.remaining_s()
    if left is not None and left < PARALLEL_MIN_LEFT_S:
        processes = 1  # no time to start workers: the shares below would be eaten by it
    results: dict[int, SolveResult] = {}
    simplicity = None
    done = 0
    progress(f"explain: {counted(jobs, 're-solve')}, {processes} at a time")

    def told(what: str) -> None:
        nonlocal done
        done += 1
        progress(f"explain: {done} of {jobs} re-solves done ({what})")

    def share_s(not_started: int) -> float | None:
        """Time of one re-solve about to start: what is left, shared evenly over the
        rounds of re-solves not yet started (this one included), `processes` a round."""
        left = solved.settings.remaining_s()
        rounds = max(math.ceil(not_started / processes), 1)
        return None if left is None else ALTERNATIVES_TIME_SHARE * left / rounds

    def past() -> bool:
        deadline = solved.settings.deadline
        return deadline is not None and deadline.expired()

    if processes <= 1:
        for index, (own, removed) in enumerate(args):
            if past():
                break
            limited = comparison.limited(share_s(jobs - done))
            results[index] = run(own, limited, removed)
            told(f"without {pools[index].label} in {pools[index].region}")
        if wants_simplicity and not past():
            limited = comparison.limited(share_s(1))
            simplicity = lifted(limited)
            told("with the limit on configurations per pool lifted")
    else:
        # Handed out as workers free up, each with its share of what is left then; the
        # limit's whole re-solve first, so that it does not run alone at the end (most
        # "without" re-solves end in the base bound's proof: solver.analysis.without).
        waiting = ([-1] if wants_simplicity else []) + list(range(len(args)))
        with process_pool(processes) as pool:
            running: dict[Future, int] = {}

            def hand_out() -> None:
                while waiting and len(running) < processes and not past():
                    limited = comparison.limited(share_s(len(waiting)))
                    index = waiting.pop(0)
                    if index < 0:
                        future = pool.submit(lifted, limited)
                    else:
                        own, removed = args[index]
                        future = pool.submit(run, own, limited, removed)
                    running[future] = index

            hand_out()
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = running.pop(future)
                    found = future.result()
                    if index < 0:  # None: the limit on configurations binds nothing
                        simplicity = found
                        told("with the limit on configurations per pool lifted")
                    elif found is not None:  # None: past the deadline in the worker
                        results[index] = found
                        told(f"without {pools[index].label} in {pools[index].region}")
                hand_out()
    alternatives = tuple(
        _alternative(solved, p, results[i], args[i][0])
        if results.get(i) is not None
        else _not_resolved(p)
        for i, p in enumerate(pools)
    )
    return alternatives, simplicity


def _not_resolved(pool) -> Alternative:
    """A pool whose re-solve the deadline left out: no cost, and why."""
    return Alternative(
        workload=pool.workload,
        region=pool.region,
        configuration=pool.label,
        count=pool.count,
        cost_without_per_month=None,
        extra_cost_per_month=None,
        replaced_by=(NOT_RESOLVED,),
    )


def _read_without(
    solved: Solved, pool, result: SolveResult, program: FleetProgram
) -> tuple[float, tuple[str, ...]]:
    """(cost, the pools of the workload in the region) of a re-solve with a solution:
    the static program's read-back (`program`: the one re-solved), or an hourly plan's
    hour by hour."""
    if solved.time_step is not None:
        return solved.time_step.cost_without(result, solved.settings, pool, program)
    sets = program.sets
    values = integral(program, result.values)
    counts = replica_counts(sets, values)
    shared = group_gpus(program, values)
    cost = sum(use.cost_per_month for use in gpu_use(sets, counts, shared))
    replaced_by = tuple(
        f"{counts[key]} x {p.candidate.label}"
        for p in sets.pools_at.get((pool.workload, pool.region), ())
        if (key := (pool.workload, p.candidate.key, pool.region)) in counts
    )
    return cost, replaced_by


def _resolve_without(
    program: FleetProgram, settings: SolveSettings, removed: tuple[str, BaseProof | None]
) -> SolveResult:
    """The program re-solved with one pool's replicas (column `removed[0]`) fixed at 0
    (here or in a worker: one solver thread, workload programs one after the other):
    where the base solve's proof is given (`removed[1]`), first from the base plan
    changed in the pool's region alone, which is the answer where the base bound proves
    it within the gap, else the search's start (solver.analysis.without); a program
    with scenario cuts by its own loop (rows its first plan needed may not be the rows
    the other needs)."""
    var, base = removed
    backend = get_backend(settings.backend)
    limited = settings.limited(settings.time_limit_s)
    if program.sets.cut_scenarios:  # its own copy of the rows: the loop adds Hall rows
        own = replace(program, lp=with_bounds(program.lp, {}))
        return solve_by_cuts(own, backend, limited, {var: (0.0, 0.0)}).result
    if base is not None and backend.capabilities.warm_start:
        started = start_without(program, backend, limited, var, base)
        if started is not None and started.answer is not None:
            return started.answer
        if started is not None:
            limited = replace(limited, start=started.values)
        program = with_base_bound(program, var, base, backend, limited)
    return optimise(program, backend, limited, {var: (0.0, 0.0)}).result


def _simplicity(
    program: FleetProgram,
    plan: Plan,
    settings: SolveSettings,
    table: CandidateTable,
    base: SolveResult | None = None,
) -> SimplicityCost | None:
    """What the limit on configurations per pool costs (solver.solve.simplicity_cost),
    searched from the base plan (`base`'s values) where given: with the limit lifted the
    program only loses rows, so the base plan is one of its plans, an incumbent from the
    first node (chat-3region: 4.2 -> 2.9 s CPU); the optimum is the same."""
    if base is not None and base.termination.has_solution:
        settings = replace(settings, start=base.values)
    try:
        return simplicity_cost(program.sets.instance, plan, settings, table)
    except TimeLimitReached:  # its program's build passed the deadline: not found in time
        limit = program.sets.instance.policy.max_configs_per_pool
        return SimplicityCost(
            max_configs_per_pool=limit, cost_per_month_unlimited=None, extra_cost_per_month=None
        )


def _alternative(solved: Solved, pool, result: SolveResult, program) -> Alternative:
    """What doing without one chosen pool costs, from its re-solve's result (of
    `program`: an hourly plan's periods program, or the static one re-solved)."""
    plan = solved.plan
    if result.termination.has_solution:
        cost, replaced_by = _read_without(solved, pool, result, program)
        extra = cost - (plan.cost_per_month or 0.0)
        if result.termination is not Termination.OPTIMAL:
            replaced_by += (UNPROVEN_ALTERNATIVE,)
    else:
        cost = extra = None
        replaced_by = (
            "no plan without it"
            if result.termination is Termination.INFEASIBLE
            else f"no plan found ({result.termination})",
        )
    return Alternative(
        workload=pool.workload,
        region=pool.region,
        configuration=pool.label,
        count=pool.count,
        cost_without_per_month=cost,
        extra_cost_per_month=extra,
        replaced_by=replaced_by,
    )


def _family_slack(solved: Solved) -> tuple[FamilySlack, ...]:
    """Per reported family: rows in use, rows tight at the plan, the smallest slack.

    An hourly plan's rows are the periods program's, every period's (as its binding
    rows are): its peak period's static program lacks the columns only the periods
    program has (replicas started after a loss), so its capacity rows read the plan's
    warm survivors alone, short of the load (-59.3 requests/s where the plan carries it
    with 22.1 to spare)."""
    program, values = solved.program, solved.result.values
    if solved.time_step is not None:
        program, values = solved.time_step.program, solved.time_step.values
    values = integral(program, values)
    rows: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for row in program.lp.constraints.values():
        shown = FAMILIES[row.family].reported and row.sense is not Sense.EQ
        if shown and not is_idle(row, values):
            rows[row.family].append((row.slack(values), is_tight(row, values)))
    return tuple(
        FamilySlack(
            family=name,
            description=FAMILIES[name].description,
            unit=FAMILIES[name].dual_unit,
            rows=len(found),
            tight_rows=sum(tight for _, tight in found),
            min_slack=min(slack for slack, _ in found),
        )
        for name, found in rows.items()
    )
