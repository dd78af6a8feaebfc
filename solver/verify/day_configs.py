"""One configuration per pool over the day (part of solver.verify.hours): an hourly
plan's dedicated interactive pools, warm or started after a region loss
(`Hour.failover_starts`), over its 24 hours run at most
policy.max_configs_per_pool configurations per (workload, region, phase), as each hour
alone does (the static verifier's configs_per_pool). A month of a horizon is a day of its
own (the month's hours, checked when the hour verifier runs on them).

Recomputed from the hours' pools alone: a configuration is a pool's label with its KV
precision; the phase is its role, with the weight precision where the workload's
disaggregated pools come in more than one over the day (the program's phase label).
Shared groups are co-location's choice and batch pools are not pools of the limit:
neither is counted, as in the program's rows.
"""

from collections import defaultdict

from models.schema.instance import Instance
from models.serving.replica import Role
from solver.plan.schema import Plan
from solver.program.row_names import ConfigsPerDayRow, phase_label
from solver.verify.verdict import Violation


def _hours_text(hours: list[int]) -> str:
    """UTC hours as runs: [0, 1, 2, 7] -> '0-2, 7'."""
    runs: list[list[int]] = []
    for hour in sorted(set(hours)):
        if runs and hour == runs[-1][-1] + 1:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def check_day_configs(instance: Instance, plan: Plan) -> list[Violation]:
    """configs_per_day[w,d,phase] for every phase that runs more configurations over the
    day than the policy allows (the module text); none without a limit."""
    limit = instance.policy.max_configs_per_pool
    if limit is None or not plan.hours:
        return []
    batch = {w.name for w in instance.workloads if w.is_batch}
    pools = [(hour.hour, pool) for hour in plan.hours for pool in hour.pools]
    pools += [(hour.hour, s.pool) for hour in plan.hours for s in hour.failover_starts]
    running = [
        (hour, pool)
        for hour, pool in pools
        if pool.count > 0 and not pool.shared and pool.workload not in batch
    ]
    precisions: dict[str, set[str]] = defaultdict(set)
    for _, pool in running:
        if pool.role is not Role.UNIFIED:
            precisions[pool.workload].add(str(pool.precision))
    used: dict[tuple[str, str, str], dict[str, list[int]]] = defaultdict(dict)
    for hour, pool in running:
        split = len(precisions[pool.workload]) > 1
        phase = phase_label(pool.role, str(pool.precision), split)
        kv = f" (KV {pool.kv_precision})" if pool.kv_precision else ""
        used[(pool.workload, pool.region, phase)].setdefault(pool.label + kv, []).append(hour)
    violations = []
    for (w, d, phase), configurations in sorted(used.items()):
        if len(configurations) > limit:
            runs = "; ".join(
                f"{label} in UTC hours {_hours_text(hours)}"
                for label, hours in sorted(configurations.items(), key=lambda c: min(c[1]))
            )
            violations.append(
                Violation(
                    requirement=ConfigsPerDayRow(w, d, phase).name(),
                    message=f"{len(configurations)} configurations over the day ({runs}); "
                    f"policy.max_configs_per_pool is {limit}: one server image per pool "
                    "all day",
                )
            )
    return violations
