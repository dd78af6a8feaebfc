"""The pipeline: instance -> candidates -> pre-solve checks -> program -> backend -> Plan.

`solve` returns a Plan that the independent verifier has accepted, or raises
`Infeasible` (with a diagnosis naming the requirements in conflict) or `NoSolution`
(time limit or solver failure). It never returns None.
"""

import time
from collections import defaultdict
from dataclasses import dataclass, replace

from models.instance import Instance
from models.scenarios import LOSE_REPLICA, Scenario
from solver.backends import Backend, get_backend
from solver.candidates import Candidate, CandidateTable, build_candidates
from solver.decompose import DECOMPOSED, solve_by_workload
from solver.diagnose import diagnose_infeasible, presolve_problems
from solver.errors import BackendUnavailable, Infeasible, NoSolution, PlanRejected
from solver.lp import LinearProgram, SolveResult, Termination
from solver.plan import (
    SHADOW_PRICE_NOTE,
    GpuUse,
    Plan,
    PoolLoad,
    ReplicaPool,
    Route,
    ScenarioResult,
    SolverRun,
)
from solver.pricing import binding_constraints, priced_rows, pricing_program
from solver.program import FleetProgram, build_program, with_bounds
from solver.sets import Mode, ProgramSets
from solver.verify import verify

MIN_TIME_LIMIT_S = 1.0
"""Time the whole program still gets when the decomposition used up the limit."""
PRICING_BACKEND = "highs"
"""Backend that prices the plan when the chosen one gives no duals (scip, cpsat)."""
ROUTE_EPSILON = 1e-7
"""Requests/s below which a route counts as unused."""


@dataclass(frozen=True)
class SolveSettings:
    """Backend and limits; defaults from the instance's `solver` section."""

    backend: str = "highs"
    time_limit_s: float = 60.0
    mip_gap: float = 1e-3
    threads: int = 1

    @classmethod
    def of(
        cls,
        instance: Instance,
        backend: str | None = None,
        time_limit_s: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
    ) -> "SolveSettings":
        """The instance's settings with any given override applied."""
        base = instance.solver
        return cls(
            backend=backend or base.backend,
            time_limit_s=base.time_limit_s if time_limit_s is None else time_limit_s,
            mip_gap=base.mip_gap if mip_gap is None else mip_gap,
            threads=base.threads if threads is None else threads,
        )


@dataclass(frozen=True)
class Solved:
    """A solved program with its plan (what `explain` works from)."""

    program: FleetProgram
    result: SolveResult
    plan: Plan
    settings: SolveSettings


def solve(instance: Instance, settings: SolveSettings | None = None) -> Plan:
    """The cheapest fleet that meets every requirement of the instance.

    Raises:
        Infeasible: no plan exists; its diagnosis names the requirements in conflict.
        NoSolution: the backend found no plan within the time limit, or failed.
        PlanRejected: the verifier rejected the solver's plan (a bug, never an answer).
    """
    return solve_program(instance, settings).plan


def solve_program(instance: Instance, settings: SolveSettings | None = None) -> Solved:
    """`solve`, keeping the program and the raw result for explanations."""
    settings = settings or SolveSettings.of(instance)
    backend = get_backend(settings.backend)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend {settings.backend!r} cannot run here: {reason}")
    table = build_candidates(instance)
    program = build_program(instance, table)
    problems = [*table.problems, *presolve_problems(program.sets)]
    if problems:
        raise Infeasible.from_problems(problems)
    result = optimise(program, backend, settings)
    if result.termination is Termination.INFEASIBLE:
        raise Infeasible(diagnose_infeasible(program, backend, settings))
    if not result.termination.has_solution:
        raise NoSolution(
            f"{result.solver} found no plan ({result.termination}) within "
            f"{settings.time_limit_s:g} s for a program of {_size_text(program.lp)}"
            + (f": {result.message}" if result.message else "")
            + "; raise --time-limit or loosen the MIP gap",
            str(result.termination),
        )
    values = integral(program, result.values)
    pricer = backend if backend.capabilities.duals else get_backend(PRICING_BACKEND)
    pricing = run_backend(pricer, pricing_program(program, values), settings, want_duals=True)
    plan = make_plan(program, table, result, values, priced_rows(pricing), settings)
    check = verify(instance, plan)
    if not check.ok:
        raise PlanRejected(
            "the solver's plan fails the independent verifier:\n"
            + "\n".join(f"  - {v}" for v in check.violations)
        )
    return Solved(program, result, plan, settings)


def optimise(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: dict[str, tuple[float, float | None]] | None = None,
) -> SolveResult:
    """Solve the program (with some variables' bounds replaced): workload by workload
    when the workloads do not compete for supply (solver.decompose), else as one, in
    what is left of the time limit."""
    started = time.monotonic()
    if len(program.sets.workloads) > 1:
        joined = solve_by_workload(program, backend, settings, bounds)
        if joined is not None:
            return joined
    left_s = max(settings.time_limit_s - (time.monotonic() - started), MIN_TIME_LIMIT_S)
    lp = with_bounds(program.lp, bounds) if bounds else program.lp
    return run_backend(backend, lp, replace(settings, time_limit_s=left_s))


def run_backend(
    backend: Backend, lp: LinearProgram, settings: SolveSettings, want_duals: bool = False
) -> SolveResult:
    """One backend call with the settings' limits."""
    return backend.solve(
        lp,
        time_limit_s=settings.time_limit_s,
        mip_gap=settings.mip_gap,
        threads=settings.threads,
        want_duals=want_duals,
    )


def integral(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """The solution with integer variables rounded (solvers return 2.9999999)."""
    rounded = dict(values)
    for name in program.lp.integer_variables:
        rounded[name] = float(round(values.get(name, 0.0)))
    return rounded


def make_plan(
    program: FleetProgram,
    table: CandidateTable,
    result: SolveResult,
    values: dict[str, float],
    duals: dict[str, float],
    settings: SolveSettings,
) -> Plan:
    """Read a solution back into a Plan (counts, GPUs, cost, routing, utilisation)."""
    sets = program.sets
    hours = sets.hours_per_month
    counts = replica_counts(sets, values)
    pools = []
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        if not count:
            continue
        c = pool.candidate
        price = sets.offers[(pool.region, c.gpu)].price_per_gpu_hour
        physics = c.capacity_at(count)  # per replica in a pool of `count` behind one queue
        pools.append(
            ReplicaPool(
                workload=pool.workload,
                region=pool.region,
                gpu=c.gpu,
                precision=c.precision,
                kv_precision=c.kv_precision,
                tp=c.config.tp,
                pp=c.config.pp,
                role=c.role,
                count=count,
                gpus=count * c.gpus,
                limit=physics.limit,
                requests_per_s_per_replica=c.requests_per_s_at(count),
                cost_per_month=count * c.gpus * price * hours,
            )
        )
    region_order = {r: i for i, r in enumerate(sets.regions)}
    pools.sort(key=lambda p: region_order[p.region])
    gpu_uses = gpu_use(sets, counts)
    size = program.lp.size()
    return Plan(
        instance=sets.instance.name,
        status="optimal" if result.termination is Termination.OPTIMAL else "feasible",
        cost_per_month=sum(use.cost_per_month for use in gpu_uses),
        total_gpus=sum(use.used for use in gpu_uses),
        gpus=tuple(gpu_uses),
        replicas=tuple(pools),
        binding=binding_constraints(program, values, duals),
        scenarios=scenario_results(sets, values, counts),
        solver=SolverRun(
            name=result.solver,
            version=result.solver_version,
            termination=str(result.termination),
            runtime_s=result.runtime_s,
            mip_gap=result.mip_gap,
            requested_gap=settings.mip_gap,
            time_limit_s=settings.time_limit_s,
            threads=settings.threads,
            variables=size["variables"],
            integer_variables=size["integer_variables"],
            constraints=size["constraints"],
            candidates=sum(len(table.of(w)) for w in sets.workloads),
            method=result.message if result.message.startswith(DECOMPOSED) else "one program",
        ),
        shadow_price_note=SHADOW_PRICE_NOTE
        if duals
        else "no shadow prices: the backend returned no duals for the pricing LP",
    )


def gpu_use(sets: ProgramSets, counts: dict[tuple[str, str, str], int]) -> tuple[GpuUse, ...]:
    """GPUs used, owned and bought per region and type, with what they cost per month:
    max(0, used - existing) x price x hours."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        used[(pool.region, pool.candidate.gpu)] += count * pool.candidate.gpus
    uses = []
    for (r, g), offer in sets.offers.items():
        n = used.get((r, g), 0)
        if not n and not offer.existing:
            continue
        bought = max(0, n - offer.existing)
        uses.append(
            GpuUse(
                region=r,
                gpu=g,
                used=n,
                existing=offer.existing,
                purchased=bought,
                available=offer.available,
                price_per_gpu_hour=offer.price_per_gpu_hour,
                cost_per_month=bought * offer.price_per_gpu_hour * sets.hours_per_month,
            )
        )
    return tuple(uses)


def replica_counts(sets: ProgramSets, values: dict[str, float]) -> dict[tuple[str, str, str], int]:
    """(workload, candidate key, region) -> replicas, for pools in use."""
    counts = {}
    for pool in sets.pools:
        count = round(values.get(sets.replicas(pool.workload, pool.candidate, pool.region), 0.0))
        if count > 0:
            counts[(pool.workload, pool.candidate.key, pool.region)] = count
    return counts


def scenario_results(
    sets: ProgramSets, values: dict[str, float], counts: dict[tuple[str, str, str], int]
) -> tuple[ScenarioResult, ...]:
    """Routing and utilisation of every phase in every scenario."""
    results = []
    for f in sets.routing_scenarios:
        routes = tuple(
            Route(workload=w, origin=o, destination=d, requests_per_s=rate, rtt_ms=rtt)
            for (f_name, w), pairs in sets.routes.items()
            if f_name == f.name
            for o, d, rtt in pairs
            if (rate := values.get(sets.served(f.name, w, o, d), 0.0)) > ROUTE_EPSILON
        )
        results.append(
            ScenarioResult(
                name=f.name,
                description=f.description,
                routing=routes,
                pools=_phase_loads(sets, f, values, counts),
            )
        )
    if sets.survives_replica_loss:
        none = results[0]
        results.append(
            ScenarioResult(
                name=LOSE_REPLICA.name,
                description=LOSE_REPLICA.description
                + " (capacity: each phase less its largest replica)",
                routing=none.routing,
                pools=_phase_loads(sets, LOSE_REPLICA, values, counts, none_scenario="none"),
            )
        )
    return tuple(results)


def _phase_loads(
    sets: ProgramSets,
    f: Scenario,
    values: dict[str, float],
    counts: dict[tuple[str, str, str], int],
    none_scenario: str | None = None,
) -> tuple[PoolLoad, ...]:
    loads_from = none_scenario or f.name
    rows = []
    for (w, d), modes in sets.modes.items():
        if d == f.lost_region or (loads_from, w, d) not in sets.inflow:
            continue
        for mode in modes:
            load = _mode_load(sets, loads_from, w, d, mode, values)
            for phase in mode.phases:
                alive = []
                for pool in sets.phase_pools(w, d, phase):
                    count = counts.get((w, pool.candidate.key, d), 0)
                    if count:
                        keep = f.surviving_replicas(d, count, sets.zones[d])
                        alive.append((keep, pool.candidate))
                if not alive and load <= ROUTE_EPSILON:
                    continue
                capacity = _phase_capacity(alive, less_one=none_scenario is not None)
                rows.append(
                    PoolLoad(
                        workload=w,
                        region=d,
                        phase=phase.label,
                        load_requests_per_s=load,
                        capacity_requests_per_s=capacity,
                        utilisation=load / capacity if capacity > 0 else 0.0,
                        pools=tuple(f"{n} x {c.label}" for n, c in alive),
                    )
                )
    return tuple(rows)


def _phase_capacity(alive: list[tuple[int, Candidate]], less_one: bool = False) -> float:
    """Requests/s the pools of a phase carry at the physics of their real sizes:
    sum n x q_c(n), each pool behind its own queue. `less_one`: the smallest such sum
    with one replica of one pool gone (its pool then a replica smaller)."""
    whole = [n * c.requests_per_s_at(n) for n, c in alive]
    if not less_one or not alive:
        return sum(whole)
    return min(
        sum(whole) - whole[i] + (n - 1) * c.requests_per_s_at(n - 1)
        for i, (n, c) in enumerate(alive)
        if n
    )


def _mode_load(
    sets: ProgramSets, f: str, w: str, d: str, mode: Mode, values: dict[str, float]
) -> float:
    return sum(values.get(var, 0.0) for var in sets.load_terms(f, w, d, mode))


def _size_text(lp: LinearProgram) -> str:
    size = lp.size()
    return (
        f"{size['variables']} variables ({size['integer_variables']} integer) and "
        f"{size['constraints']} constraints"
    )
