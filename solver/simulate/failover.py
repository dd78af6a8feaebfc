"""The targets a pool is replayed against in a failure scenario, as the planner and the
verifier hold it to them.

A region that may receive users rerouted from a lost region (or zone) serves them and
its own from one queue, and a rerouted user's first token crosses the round trip once
more; so the planner credits the region's pools at the p99 TTFT target less the longest
such round trip (`models.operations.scenarios.rerouted_rtt_ms` and `failover_targets`),
and the verifier checks them there. The replay judges those pools at the same tighter
target (and splits the load by their capacity at it); the TPOT target is unchanged.
"""

from models.operations.scenarios import RegionGraph, failure_scenarios, rerouted_rtt_ms
from models.schema.instance import Instance, Workload
from solver.simulate.batch_deadline import dedicated_batch


def failover_workloads(instance: Instance, scenario: str) -> dict[tuple[str, str], Workload]:
    """(workload, region) -> the workload with its p99 TTFT target less the longest round
    trip of the users `scenario` may reroute to the region (at least 1 us, as
    `failover_targets`); pairs with no rerouted user, or no TTFT target, are absent."""
    lost = next((s for s in failure_scenarios(instance) if s.name == scenario), None)
    if lost is None:
        return {}
    graph = RegionGraph.of(instance)
    tighter = {}
    for workload in instance.workloads:
        slo = workload.slo
        if slo.ttft_p99_ms is None:
            continue
        origins = [o for o, level in workload.demand.items() if level.peak_rps > 0]
        for region, rtt_ms in rerouted_rtt_ms(
            graph, lost, origins, slo.max_failover_rtt_ms
        ).items():
            target = max(slo.ttft_p99_ms - rtt_ms, 1e-3)
            tighter[(workload.name, region)] = workload.model_copy(
                update={"slo": slo.model_copy(update={"ttft_p99_ms": target})}
            )
    return tighter


UNROUTED_NOTE = "(no row of the scenario routes load to it: nothing to replay)"
"""Why a pool the scenario sends nothing is in `PlanSimulation.not_simulated`."""


def lost_region(instance: Instance, scenario: str) -> str | None:
    """The region `scenario` loses (None: it loses none)."""
    return next((s.lost_region for s in failure_scenarios(instance) if s.name == scenario), None)


def unrouted_pools(instance: Instance, plan, scenario: str) -> list[str]:
    """The plan's pools (an hourly plan: the replayed hour's) that no row of `scenario`
    lists, outside the region it loses: a pool held for another scenario (a region's
    pool for its neighbour's zone loss, say) that takes no load in this one, named so
    the replay's table and the plan's pools add up. `plan` is a `solver.plan.Plan`; a
    row lists a pool as `n x label` (`n x shared group` for a group)."""
    lost = lost_region(instance, scenario)
    result = next((s for s in plan.scenarios if s.name == scenario), None)
    listed: set[tuple[str, str, str, str]] = set()
    for row in result.pools if result is not None else ():
        role = str(row.phase).split("-")[0]
        for text in row.pools:
            label = text.split(" x ", 1)[-1].removesuffix(" (started)")
            listed.add((row.workload, row.region, role, label))
    found = []
    for pool in plan.replicas:
        label = "shared group" if pool.members else pool.label
        role = str(pool.role)
        if not pool.count or pool.region == lost or dedicated_batch(instance, pool):
            continue  # a batch's own pool: checked by throughput (solver.simulate.batch_deadline)
        if any((w, pool.region, role, label) in listed for w in pool.workloads):
            continue
        found.append(
            f"{pool.workload} {pool.region} {role}: {pool.count} x {pool.label} {UNROUTED_NOTE}"
        )
    return found
