"""capacity[f,w,d,phase]: each phase's load is within what the surviving replicas carry.

    sum_{c in C_w(phase)} q_c x alive_f[w,c,d] >= load_f[w,d,mode(phase)]

with q_c the candidate's capacity at the SLO (requests/s of its own phase) and

    alive_f[w,c,d] = replicas[w,c,d]           d intact in f
                   = zone_survivors[w,c,d]     f = lose=<d>/zone
                   (no row)                    f = lose=<d>: d serves nothing, no route
                                               leads there

Phases: unified replicas carry the `unified` mode's load; a disaggregated mode needs
both its prefill pools (prompts/s) and its decode pools (generations/s) to carry its
load, each request being one prompt and one generation. Capacity adds up linearly over
replicas and pools: a pool behind one queue waits no more than its replicas apart, so
this is conservative. Its dual is the monthly cost of one more request/s of that phase's
load in that region under f.
"""

from solver.families import register
from solver.lp import LinearProgram, Sense
from solver.scenarios import ScenarioKind
from solver.sets import ProgramSets

CAPACITY = register(
    "capacity",
    "[scenario,workload,region,phase]",
    "the region's load of the phase is within the capacity of the replicas that survive",
    "$/month per request/s of load",
)


def add_capacity_within_pools(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload, serving region and phase with load routed to it."""
    for f in sets.routing_scenarios:
        for (w, d), modes in sets.modes.items():
            if d == f.lost_region or (f.name, w, d) not in sets.inflow:
                continue
            zone_hit = f.kind is ScenarioKind.ZONE and f.region == d
            for mode in modes:
                load = sets.load_terms(f.name, w, d, mode)
                for phase in mode.phases:
                    terms = {var: -1.0 for var in load}
                    for pool in sets.phase_pools(w, d, phase):
                        alive = (sets.zone_survivors if zone_hit else sets.replicas)(
                            w, pool.candidate, d
                        )
                        terms[alive] = pool.candidate.requests_per_s
                    lp.add_constraint(
                        f"capacity[{f.name},{w},{d},{phase.label}]",
                        CAPACITY.name,
                        terms,
                        Sense.GE,
                        0.0,
                    )
