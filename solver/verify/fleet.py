"""The independent verifier: does a fleet meet the instance's requirements?

It is kept apart from the planner on purpose: it imports only models/, the plan schema,
the row names and its own parts, one module per family of checks:

    solver.verify.pools      step 1: the plan's pools and their recomputed physics
    solver.verify.site       steps 2 and 3: supply, cost, servers, power, racks, configs
    solver.verify.scenarios  step 4: every failure scenario, by max-flow or replica loss
    solver.verify.groups     step 5: shared groups, one engine, swapped weights
    solver.verify.totals     step 6: every other figure the plan states
    solver.verify.verdict    the verdict: Violation, ScenarioCheck, Verification

It reads only the instance and the plan's replica pools, never the program or a solver:

1. Each pool's configuration is one the instance allows (workload, region, GPU,
   precision, TP dividing the heads), and its capacity at the SLO is recomputed from
   scratch with the physics (`models.serving.capacity.replica_capacity`): it must fit and meet
   the SLO at some load. A capacity or limit the plan states is never the verdict: the
   requirements are judged on the recomputed physics (step 4), so a stated figure that
   differs from it (a plan solved before the efficiency was re-tuned) is a warning, and
   the plan fails only when the recomputed capacity no longer carries the load. A pool
   is every replica of one configuration (GPU, precision, KV precision, TP, PP, role)
   serving one workload in
   one region, however many plan entries list them: they sit behind one router and
   share one prompt queue, so the capacity per replica is that of a pool of the
   replicas that actually serve
   (`pool_replicas` = the pool's surviving count in each scenario), never an assumption
   the program made.
2. GPUs used per region and type stay within the existing fleet plus the supply.
3. The cost is recomputed: sum over (r, g) of bought x price x hours, bought =
   max(0, used - existing) in whole servers with policy.buy_unit: node
   (models.operations.site.gpus_bought); the plan's stated cost, GPU total and servers, when
   given, must match (`whole_servers[r,g]`). The GPUs installed (existing and bought)
   stay within each region's power_kw and racks (`power[r]`, `rack_space[r]`), and no
   (workload, region, phase) mixes more dedicated configurations than
   policy.max_configs_per_pool (`configs_per_pool[w,d,phase]`; shared groups not counted).
4. Every scenario the policy names is served. For `none`, region and zone loss: a
   max-flow per workload (networkx) on

       source -> origin o          capacity D[w,o]
       origin o -> destination d   when the latency policy allows d for o's users in f
       destination d -> sink       capacity U_d + sum_p min(P_d,p, D_d,p)

   with U, P, D the unified, prefill and decode capacity of the replicas that survive
   f, each pool n x q(n) at its n survivors (q at the TTFT target less the longest
   round trip of the users f may reroute to d, when any may come:
   `models.operations.scenarios.rerouted_rtt_ms`) (a prefill pool pairs with a decode pool of
   the same weight precision). Every request/s of demand must reach the sink. Replica
   loss: for every pool, each region's own demand is still within its capacity with one
   replica of that pool gone (that pool n - 1 replicas at q(n - 1)). Demand is the
   peak times `demand_growth`; every capacity counts at policy.max_utilization of it.

5. Shared groups (entries with `members`, policy.colocation): each group is recomputed
   on its own with `models.colocation.coresident.evaluate_group` at the loads the plan may route to
   one group replica, its members' stated a[w] (routing is by capacity, so in every
   scenario the flow above sends each replica at most a[w] of member w, and the group's
   feasible loads are down-closed: if it holds at a[w] it holds at anything below). It
   must fit in HBM (weights + activations + reserves + p99 KV of every member) and meet
   every member's p99 TTFT and TPOT with the others' interference; otherwise it is a
   violation named `groups[t,r]` and credits nothing. A group that holds credits n x a[w]
   to member w in the flows, and its loss is one of the single replica losses. A group
   served by one engine (`shared_engine`: multi-LoRA adapters of one base, or a
   same-model merge) is recomputed with `models.colocation.engine_group.engine_group` instead: one
   base (adapters only with policy.multi_lora), and the engine's capacity along the
   stated a[w], at the strictest SLO with the members' envelope mix, at least sum a[w].
   A swapped group (`swapped_weights`: one weight slot, the others paged in from host
   memory) is recomputed with `models.colocation.swap_group.evaluate_swapped_group`: the largest
   weights plus every engine's KV and reserve in HBM, at most 5% of the GPU's time
   swapping, and every member's warm p99 TTFT plus its swap wait within its target.

   Each row of the plan's scenario table states the capacity of its phase's survivors
   (`capacity_requests_per_s`, the denominator of its utilisation): recomputed there
   from the same physics, at their survivors' pool size and the scenario's rerouted
   TTFT target, at full use (solver.verify.scenarios.stated_capacities). A row that
   states more while its pools state the physics' own capacity per replica is a
   violation (its utilisation reads lower than it is); one that states less (a plan
   solved at a tighter target, checked at a looser one) or whose pools' figures moved
   too (a plan solved on other physics) is a warning, its load judged above.

6. Every other figure the plan states (the `gpus` table, each entry's cost, its routing,
   every number finite) against its recomputation: solver.verify.totals. Replicas that
   need more GPUs than their regions have are named there before any physics runs, and
   the verifier stops: a count of 10^12 never reaches the pool queueing.

The max-flow does not take routing from the plan, so a fleet a user owns today (a file holding only
`{"replicas": [...]}`) is verified the same way.

Violations are named with the program's row names (solver.program.row_names, the plan's
vocabulary): `replicas[w,c,r]`, `gpu_supply[r,g]`, `demand[f,w,o]` (one per origin the
flow cannot serve; the message names the whole stuck group) and
`replica_spare[w,d,phase,c]` for the worst single loss. The phase is told by precision
(`decode-fp8`) when the plan's disaggregated pools of the workload come in more than one
precision; the program decides that on its candidate table, so the two differ only for
a plan that uses one of several precisions offered.
"""

from models.colocation.warm_cold import warm_cold_instance
from models.schema.instance import Instance
from solver.plan.schema import Plan
from solver.program.row_names import GpuSupplyRow
from solver.verify.attribution import check_attribution
from solver.verify.display import stated_display
from solver.verify.groups import GroupShare, check_groups
from solver.verify.pools import recompute_pools
from solver.verify.scenarios import check_scenarios, stated_capacities
from solver.verify.site import (
    check_configs_per_pool,
    check_cost,
    check_one_precision,
    check_site,
    check_supply,
)
from solver.verify.totals import (
    Finding,
    Totals,
    beyond_bounds,
    over_supply,
    recompute_totals,
    stated_figures,
    stated_totals,
)
from solver.verify.verdict import COST_TOLERANCE, ScenarioCheck, Verification, Violation

__all__ = [
    "COST_TOLERANCE",
    "ScenarioCheck",
    "Verification",
    "Violation",
    "stated_display",
    "verify",
]


def verify(instance: Instance, plan: Plan) -> Verification:
    """Check a plan (or a fleet someone owns) against the instance; list every violation.

    A plan with `warm_cold_split` is checked against the instance with those workloads
    split into their warm and cold halves (`models.colocation.warm_cold`), which the instance's
    policy must allow."""
    if plan.warm_cold_split:
        split, refusal = _warm_cold(instance, plan)
        if refusal is not None:
            return Verification(
                ok=False,
                violations=(refusal,),
                cost_per_month=plan.cost_per_month or 0.0,
                total_gpus=plan.total_gpus or 0,
                checks=(),
            )
        instance = split
    violations: list[Violation] = []
    totals = recompute_totals(instance, plan)  # integer sums: no physics yet
    stated = stated_figures(instance, plan, totals)
    beyond, unbounded = over_supply(instance, totals.used), beyond_bounds(plan)
    if beyond or unbounded:
        return _refused_before_physics(plan, totals, beyond, [*unbounded, *stated])
    warnings: list[Violation] = []
    pools: list = recompute_pools(instance, plan, violations, warnings)
    pools += check_groups(instance, plan, violations)
    used = check_supply(instance, pools, violations)
    cost = check_cost(instance, plan, used, violations)
    check_site(instance, plan, used, violations)
    dedicated = [p for p in pools if not isinstance(p, GroupShare)]
    check_configs_per_pool(instance, dedicated, violations)
    check_one_precision(instance, dedicated, violations)
    reroutes: dict = {}
    checks = check_scenarios(instance, pools, violations, reroutes)
    if not plan.hours:  # an hourly plan's table is an hour's (solver.verify.hour_scenarios)
        violations += stated_capacities(instance, plan.scenarios, pools, reroutes, warnings)
    violations += [_violation(finding) for finding in stated]
    violations += check_attribution(instance, plan)
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=cost,
        total_gpus=sum(used.values()),
        checks=tuple(checks),
        warnings=tuple(warnings),
        gpus_bought=totals.gpus_bought,
    )


def _warm_cold(instance: Instance, plan: Plan) -> tuple[Instance, Violation | None]:
    """The instance with the plan's warm/cold split applied, or why it cannot be."""
    if not instance.policy.warm_cold_split:
        return instance, Violation(
            requirement="warm_cold_split",
            message=f"splits {list(plan.warm_cold_split)} into warm and cold pools; the "
            "instance's policy.warm_cold_split is off",
        )
    try:
        return warm_cold_instance(instance, plan.warm_cold_split), None
    except ValueError as error:
        return instance, Violation(requirement="warm_cold_split", message=str(error))


def _refused_before_physics(
    plan: Plan,
    totals: Totals,
    beyond: dict[tuple[str, str], str],
    findings: list[Finding],
) -> Verification:
    """A fleet that needs more GPUs than its regions have (or a layout beyond bounds)
    cannot be built: say so without asking the physics, whose pool queueing costs time in
    proportion to the replica count (10^12 replicas would never return)."""
    skipped = "; the physics and scenario checks run once the fleet fits the supply"
    violations = [
        Violation(requirement=GpuSupplyRow(r, g).name(), message=message + skipped)
        for (r, g), message in beyond.items()
    ]
    violations += [_violation(f) for f in (*findings, *stated_totals(plan, totals))]
    return Verification(
        ok=False,
        violations=tuple(violations),
        cost_per_month=totals.cost_per_month,
        total_gpus=totals.total_gpus,
        checks=(),
        gpus_bought=totals.gpus_bought,
    )


def _violation(finding: Finding) -> Violation:
    return Violation(requirement=finding.requirement, message=finding.message)
