"""capacity[f,w,d,phase]: each phase's load is within what the surviving replicas carry.

    sum_{c in C_w(phase)} credit_f[w,c,d] >= load_f[w,d,mode(phase)] / u

(u = policy.max_utilization, 1 by default: no pool planned above u of its capacity)

    credit_f[w,c,d] = q_c x alive_f[w,c,d] + sum_k gain_k x pooled_f[w,c,d,P_k]

with q_c the capacity at the SLO of a lone replica of the candidate (requests/s of its
own phase), the pooling steps of solver.program.families.pooling on top, and

    alive_f[w,c,d] = replicas[w,c,d]           d intact in f   (pooled_f = pooled)
                   = zone_survivors[w,c,d]     f = lose=<d>/zone (pooled_f =
                                               pooled_survivors, zone gains)
                   (no row)                    f = lose=<d>: d serves nothing, no route
                                               leads there

Failover round trip: in a scenario that may reroute users to d, d's replicas serve
their own users and the rerouted ones from one queue, and a rerouted user's first token
crosses the round trip once more, so a dedicated pool in d is credited on its curve at
the TTFT target less the longest such round trip, q'_c (same steps, `credit_f` with q'
in place of q: `solver.candidates.pools.failover_curve`, `ProgramSets.failover_tiers`); where no
rerouted user may come, q. Shared groups (solver.program.families.groups) are not charged.

Phases: unified replicas carry the `unified` mode's load; a disaggregated mode needs
both its prefill pools (prompts/s) and its decode pools (generations/s) to carry its
load, each request being one prompt and one generation. The pools of different
candidates in a region are separate queues (the router splits the phase's load between
them at random, which keeps each share Poisson), so their credits add up; within a pool
the replicas share one queue, which the pooling steps credit. Its dual is the monthly
cost of one more request/s of that phase's load in that region under f.
"""

from dataclasses import dataclass
from typing import ClassVar

from models.operations.scenarios import ScenarioKind
from solver.program.families import add_row, register
from solver.program.families.pooling import pool_credit
from solver.program.families.split import load_terms
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class CapacityRow(Index):
    """capacity[f,w,d,phase]."""

    family: ClassVar[str] = "capacity"
    scenario: str
    workload: str
    region: str
    phase: str


CAPACITY = register(
    CapacityRow,
    "the region's load of the phase is within the capacity of the replicas that survive",
    "$/month per request/s of load",
)


def add_capacity_within_pools(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload, serving region and phase with load routed to it.
    A pool's credit terms depend on the scenario only through whether its zone is hit and
    the round trip of the users rerouted to it (`ProgramSets.failover_tiers`), so they
    are worked out once per pool and such pair, however many scenarios share them."""
    credits: dict[tuple[int, bool, float], dict[str, float]] = {}
    for f in sets.routed_scenarios:
        for (w, d), modes in sets.modes.items():
            if d == f.lost_region or (f.name, w, d) not in sets.inflow:
                continue
            zone_hit = f.kind is ScenarioKind.ZONE and f.region == d
            for mode in modes:
                load = load_terms(sets, f.name, w, d, mode)
                for phase in mode.phases:
                    terms = {var: -sets.load_per_capacity for var in load}
                    for pool in sets.phase_pools(w, d, phase):
                        rtt_ms = sets.rerouted_rtt.get((f.name, w, d), 0.0)
                        key = (id(pool), zone_hit, rtt_ms)  # sets.pools outlives the build
                        if key not in credits:
                            at = sets.failover_tiers(f.name, pool)
                            credits[key] = pool_credit(pool, zone_hit, at)
                        terms.update(credits[key])
                    add_row(lp, CapacityRow(f.name, w, d, phase.label), terms, Sense.GE, 0.0)
