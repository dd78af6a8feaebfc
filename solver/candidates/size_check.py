"""How large the work of a solve will be, told before it is done (issue 16).

Two counts, each against a limit of `models/schema/program_limits.py`, each taken before
the work it measures starts:

1. Configurations to evaluate, before any physics (`check_configurations`): for every
   distinct (model, traffic mix, latency targets) of the workloads (the candidate
   table evaluates each configuration once per such triple),

       sum over offered GPU g, precision p it supports, TP t dividing the heads within
       its node:  |PP choices within the layers| x |(EP, DP) layouts at t| x |roles|

   the count `configurations()` would enumerate, multiplied out instead of built.
   Beyond `CONFIGURATIONS`: exit 2 (bad input; a work limit however long the time limit).

2. Variables of the program, from the candidate table and the scenarios, before the
   program is built (`check_program_size`): the replica variables (one per pool, every
   (workload, candidate, region) that can hold a replica: `ProgramSets.pools`) plus the
   routing variables (one per scenario, workload, origin with demand and destination
   that may serve it and hosts the workload: `ProgramSets.routes`). Both are variables
   the program will hold, so the count is a lower bound of its size (zone, pooling and
   purchase variables come on top; in the benchmark they are ~3% of the rest). The
   routes are counted workload by workload and the count stops as soon as it passes
   the limit, so counting costs no more than the limit, however large the instance.
   Beyond `PROGRAM_VARIABLES`: exit 2 (the program cannot be built in reasonable time
   and memory). Beyond `VARIABLES_PER_SOLVER_S` x the time limit (never below
   `VARIABLES_ANY_TIME_LIMIT`): `NoSolution`, exit 4, the code of a solve that found no
   plan in time, because that is what it is: a longer time limit may solve it, so the
   instance is not wrong, and the message gives the time limit it would need.

   An hourly program (solver.time.periods) holds one copy of the static program per
   period of the day, each on its period's hour instance; its count is the sum of the
   periods' counts (`check_program_size(..., periods=...)`), against the same limits.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from models.operations.scenarios import Scenario, failure_scenarios
from models.schema import program_limits
from models.schema.errors import InputError, Issue
from models.schema.instance import Instance
from models.schema.quantities import counted as count_of
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.replica import Role
from solver.candidates.layouts import expert_layouts, offered_gpus
from solver.candidates.table import CandidateTable
from solver.errors import NoSolution
from solver.program.sets import ProgramSets

TERMINATION = "too_large"
"""`NoSolution.termination` of a program refused for its size before solving."""


@dataclass(frozen=True)
class ProgramSize:
    """Variables the program will hold at least: replica counts and routes."""

    pools: int
    routes: int
    complete: bool
    """False when counting stopped at the limit (the true count is larger)."""

    @property
    def variables(self) -> int:
        """pools + routes (a lower bound of the program's variables)."""
        return self.pools + self.routes


def count_configurations(instance: Instance) -> int:
    """Configurations the candidate table will evaluate (module docstring, item 1)."""
    policy = instance.policy
    roles = 3 if policy.disaggregation else 1
    gpus = [instance.gpu_specs[name] for name in offered_gpus(instance)]
    layouts = cache(lambda model, tp: len(expert_layouts(instance, instance.llm_specs[model], tp)))
    distinct = {
        (
            w.model,
            traffic_mix(w, policy.prefix_affinity),
            latency_targets(w.slo),
        )
        for w in instance.workloads
    }
    total = 0
    for model, _, _ in distinct:
        entry = instance.model_entry(model)
        llm = instance.llm_specs[model]
        pps = sum(1 for pp in set(policy.pipeline_parallel) if pp <= llm.layers)
        for gpu in gpus:
            precisions = sum(1 for p in entry.weight_precisions if gpu.supports(p))
            for tp in set(policy.tensor_parallel):
                if llm.attention_heads % tp or tp > gpu.gpus_per_node:
                    continue
                total += precisions * pps * layouts(model, tp) * roles
    return total


def check_configurations(instance: Instance) -> int:
    """The configuration count, or InputError (exit 2) beyond `program_limits.CONFIGURATIONS`."""
    count = count_configurations(instance)
    most = program_limits.CONFIGURATIONS
    if count > most.count:
        raise InputError(
            [
                Issue(
                    instance.name or "instance",
                    None,
                    "policy",
                    f"{count:,} {most.what} (GPU types x precisions x tensor_parallel x "
                    f"pipeline_parallel x expert layouts x roles, for "
                    f"{len(instance.workloads)} workloads); at most {most.count:,} "
                    f"({most.why}; CONFIGURATIONS in models/schema/program_limits.py): offer fewer "
                    "parallel choices or GPU types",
                )
            ]
        )
    return count


def measure_program(
    instance: Instance,
    table: CandidateTable,
    scenarios: tuple[Scenario, ...] | None = None,
    stop_at: int | None = None,
) -> ProgramSize:
    """Pools and routes of the program of `instance` over `table` (module docstring,
    item 2), counting no further than `stop_at` variables.

    Counted as `ProgramSets` defines them, without its per-pool work (the pool tiers ask
    every scenario's routes of every pool, minutes for 100 regions x 200 workloads):
    a pool is (w, c, r) with r able to hold one replica of c; w is served in r when r
    holds a unified pool of w or a prefill and a decode pool of one precision.
    """
    sets = ProgramSets(instance, table, scenarios or failure_scenarios(instance))
    available: dict[str, list[str]] = {}  # GPU type -> regions offering it
    for r, g in sets.offers:
        available.setdefault(g, []).append(r)
    pools = 0
    serving: dict[str, set[str]] = {}
    for workload in instance.workloads:
        roles: dict[str, set[tuple[Role, str]]] = {}
        for c in table.of(workload.name):
            for r in available.get(c.gpu, ()):
                if sets.offers[(r, c.gpu)].available >= c.gpus:
                    pools += 1
                    roles.setdefault(r, set()).add((c.role, str(c.precision)))
        serving[workload.name] = {r for r, held in roles.items() if _serves(held)}
    if stop_at is not None and pools > stop_at:
        return ProgramSize(pools, 0, complete=False)
    routes = 0
    for count in _route_counts(sets, serving):
        routes += count
        if stop_at is not None and pools + routes > stop_at:
            return ProgramSize(pools, routes, complete=False)
    return ProgramSize(pools, routes, complete=True)


def _serves(held: set[tuple[Role, str]]) -> bool:
    """Whether pools of these (role, precision) form a serving mode (`ProgramSets.modes`)."""
    prefill = {p for role, p in held if role is Role.PREFILL}
    decode = {p for role, p in held if role is Role.DECODE}
    return any(role is Role.UNIFIED for role, _ in held) or bool(prefill & decode)


def _route_counts(sets: ProgramSets, serving: dict[str, set[str]]) -> Iterable[int]:
    """Routes per (scenario, workload, origin), as `ProgramSets.routes` holds them: one
    scenario at a time (so that counting stops after a few shortest-path searches when
    the program is too large), each workload's own origins only."""
    allowed: dict[tuple[str, float | None], frozenset[str]] = {}
    for f in sets.routing_scenarios:
        allowed.clear()
        for workload in sets.instance.workloads:
            here = serving[workload.name]
            if not here:
                continue
            rtt = workload.slo.max_failover_rtt_ms
            for o, level in workload.demand.items():
                if level.peak_rps <= 0:
                    continue
                if (o, rtt) not in allowed:
                    allowed[(o, rtt)] = frozenset(sets.graph.destinations(f, o, rtt))
                yield len(allowed[(o, rtt)] & here)


def measure_periods(
    periods: Sequence[Instance], table: CandidateTable, stop_at: int | None = None
) -> ProgramSize:
    """`measure_program` summed over the periods' hour instances (one static copy each),
    counting no further than `stop_at` variables in all."""
    pools = routes = 0
    for hour in periods:
        left = None if stop_at is None else stop_at - pools - routes
        size = measure_program(hour, table, stop_at=left)
        pools, routes = pools + size.pools, routes + size.routes
        if not size.complete:
            return ProgramSize(pools, routes, complete=False)
    return ProgramSize(pools, routes, complete=True)


def check_program_size(
    instance: Instance,
    table: CandidateTable,
    time_limit_s: float | None,
    periods: Sequence[Instance] = (),
    scenarios: tuple[Scenario, ...] | None = None,
) -> ProgramSize:
    """The program's size (a lower bound), or a refusal before it is built: InputError
    beyond `program_limits.PROGRAM_VARIABLES`, NoSolution beyond what `time_limit_s` allows
    (none: the hard limit only). `periods`: the hour instances of an hourly program,
    one static copy each (the module text); none for the static program of `instance`.
    `scenarios`: those with routing columns in a static program (default: every failure
    scenario; with `scenario_rows: cuts`, `none` only)."""
    hard = program_limits.PROGRAM_VARIABLES
    in_time = hard.count
    if time_limit_s is not None:
        in_time = max(
            program_limits.VARIABLES_ANY_TIME_LIMIT,
            int(program_limits.VARIABLES_PER_SOLVER_S * time_limit_s),
        )
    stop_at = min(hard.count, in_time)
    if periods:
        size = measure_periods(tuple(periods), table, stop_at=stop_at)
    else:
        size = measure_program(instance, table, scenarios, stop_at=stop_at)
    scenarios = scenarios or failure_scenarios(instance)
    if size.complete:
        return size
    candidates = sum(len(table.of(w.name)) for w in instance.workloads)
    copies = f", in {count_of(len(periods), 'period')} of the day" if periods else ""
    counted = (
        f"at least {size.variables:,} variables ({size.pools:,} replica counts over "
        f"{candidates:,} candidates, and {size.routes:,} routes counted before stopping, "
        f"over {len(scenarios)} failure scenarios{copies})"
    )
    if size.variables > hard.count:
        raise InputError(
            [
                Issue(
                    instance.name or "instance",
                    None,
                    "",
                    f"the program would hold {counted}; at most {hard.count:,} {hard.what} "
                    f"({hard.why}; PROGRAM_VARIABLES in models/schema/program_limits.py): "
                    "fewer regions, workloads or failure scenarios, or a tighter "
                    "max_failover_rtt_ms",
                )
            ]
        )
    needed_s = size.variables / program_limits.VARIABLES_PER_SOLVER_S
    raise NoSolution(
        f"not started: the program would hold {counted}, more than a backend solves in "
        f"{time_limit_s:g} s (about {program_limits.VARIABLES_PER_SOLVER_S:,} variables a "
        f"second at best, VARIABLES_PER_SOLVER_S in models/schema/program_limits.py); raise "
        f"--time-limit to more than {needed_s:,.0f} s, or plan fewer regions or workloads at once",
        TERMINATION,
    )
