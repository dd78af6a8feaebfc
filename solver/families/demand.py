"""demand[f,w,o]: every region's users are served, in every scenario.

    sum_{d : (f,w,o,d) is a route} served[f,w,o,d] = D[w,o]      for all f, w, o with D > 0

The routes already encode the latency policy: in `none` only d = o; in a failure
scenario any d within `max_failover_rtt_ms` of o (never the lost region). Its dual is
what one more request/s of peak demand from o costs per month under f.
"""

from solver.families import register
from solver.lp import LinearProgram, Sense
from solver.sets import ProgramSets

DEMAND = register(
    "demand",
    "[scenario,workload,origin]",
    "the peak requests/s of the origin's users are served somewhere the latency policy allows",
    "$/month per request/s of demand",
)


def add_demand_met(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload and origin region with demand."""
    for f in sets.routing_scenarios:
        by_origin: dict[tuple[str, str], list[str]] = {}  # one pass over the routes
        for w in {w for w, _ in sets.demand}:
            for o, d, _ in sets.routes[(f.name, w)]:
                by_origin.setdefault((w, o), []).append(d)
        for (w, o), rate in sets.demand.items():
            terms = {sets.served(f.name, w, o, d): 1.0 for d in by_origin.get((w, o), ())}
            lp.add_constraint(f"demand[{f.name},{w},{o}]", DEMAND.name, terms, Sense.EQ, rate)
