"""The candidate table of a large instance, evaluated in worker processes.

`solver.candidates.table.build_candidates` evaluates workloads one after the other, sharing the
physics of a configuration between workloads with the same model, token mix and SLO
(its cache key). Here the workloads are split into as many shares as there are worker
processes (solver.decompose.parallel), each share holding whole cache groups (so no physics is
evaluated twice across processes), and each share is built by `build_candidates` on
the instance restricted to its workloads. Candidates depend on the instance's regions,
supply and policy and on their own workload only, so the merged table is the one
`build_candidates` returns for the whole instance, workload for workload, in the
instance's order.

Only worth it for many workloads (`PARALLEL_MIN_CONFIGURATIONS` configurations to
evaluate): a worker process costs its start-up.
"""

from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, traffic_mix
from solver.candidates.layouts import configurations
from solver.candidates.table import CandidateTable, build_candidates
from solver.decompose.parallel import processes_for, worker_pool
from solver.settings import SolveSettings, TimeLimitReached

PARALLEL_MIN_CONFIGURATIONS = 400
"""Configurations to evaluate below which the table is built in this process."""


def build_candidates_parallel(
    instance: Instance, settings: SolveSettings | None = None
) -> CandidateTable:
    """`build_candidates`, with the workloads shared out over worker processes when
    there are enough of them (otherwise in this process).

    Raises:
        TimeLimitReached: the deadline passed while a share was evaluated.
    """
    groups = _cache_groups(instance)
    work = {key: sum(len(configurations(instance, w)) for w in ws) for key, ws in groups.items()}
    if sum(work.values()) < PARALLEL_MIN_CONFIGURATIONS:
        return build_candidates(instance, settings)
    processes = processes_for(len(groups))
    if processes <= 1:
        return build_candidates(instance, settings)
    shares: list[list[str]] = [[] for _ in range(processes)]
    loads = [0] * processes
    for key in sorted(groups, key=lambda k: -work[k]):  # largest first, to the lightest
        lightest = loads.index(min(loads))
        shares[lightest] += [w.name for w in groups[key]]
        loads[lightest] += work[key]
    parts = [_restricted(instance, share) for share in shares if share]
    with worker_pool(len(parts)) as pool:
        built = list(pool.map(_build_share, parts, [settings] * len(parts)))
    tables = []
    for table in built:
        if isinstance(table, tuple):  # the deadline passed in a worker
            stage, limit_s, elapsed_s = table
            raise TimeLimitReached(stage, limit_s, elapsed_s)
        tables.append(table)
    return _merged(instance, tables)


def _cache_groups(instance: Instance) -> dict[tuple, list]:
    """Workloads by what `build_candidates` shares between them: model, mix, targets."""
    groups: dict[tuple, list] = {}
    for workload in instance.workloads:
        mix = traffic_mix(workload, instance.policy.prefix_affinity)
        key = (workload.model, mix, latency_targets(workload.slo))
        groups.setdefault(key, []).append(workload)
    return groups


def _restricted(instance: Instance, names: list[str]) -> Instance:
    """The instance with only the named workloads."""
    wanted = set(names)
    return instance.model_copy(
        update={"workloads": [w for w in instance.workloads if w.name in wanted]}
    )


def _build_share(
    instance: Instance, settings: SolveSettings | None
) -> CandidateTable | tuple[str, float, float]:
    """One share's table in a worker; a deadline passed comes back as (stage, limit,
    elapsed), since the exception itself does not cross processes."""
    try:
        return build_candidates(instance, settings)
    except TimeLimitReached as stopped:
        deadline = settings.deadline if settings is not None else None
        limit_s = (deadline.limit_s or 0.0) if deadline is not None else 0.0
        elapsed_s = deadline.elapsed_s() if deadline is not None else 0.0
        return (stopped.stage, limit_s, elapsed_s)


def _merged(instance: Instance, tables: list[CandidateTable]) -> CandidateTable:
    """One table from the shares', workloads in the instance's order. A share's problems
    are one per workload of the share left without candidates, in the share's order."""
    order = [w.name for w in instance.workloads]
    share_of = {w: table for table in tables for w in table.by_workload}
    pending = {id(table): list(table.problems) for table in tables}
    problems = []
    for w in order:
        table = share_of.get(w)
        if table is not None and not table.by_workload[w] and pending[id(table)]:
            problems.append(pending[id(table)].pop(0))
    return CandidateTable(
        {w: share_of[w].by_workload[w] for w in order if w in share_of},
        {w: share_of[w].evaluated[w] for w in order if w in share_of},
        {w: share_of[w].usable[w] for w in order if w in share_of},
        tuple(problems),
        {w: share_of[w].set_aside[w] for w in order if w in share_of[w].set_aside},
    )
