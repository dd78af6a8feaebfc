"""The variables of the fleet program.

replicas[w,c,r]      integer, 0 <= . <= floor((existing + max_gpus)[r,g(c)] / gpus(c))
                     replicas of candidate c serving workload w in region r; only
                     where r offers c's GPU type (the decision)
served[f,w,o,d]      >= 0, requests/s of region o's users of w served in d in
                     scenario f; only over routes the latency policy allows
<mode>[f,w,d]        >= 0, requests/s of d's load of w carried by one serving mode
                     (`unified`, `disagg[-p]`); only where d offers several modes
zone_survivors[w,c,r] integer >= 0, replicas of a pool left when r loses a zone
                     (survive: zone)
pool_used[w,c,r]     binary, 1 when the pool has a replica (survive: replica)
pool_at_least[w,c,r,P], pooled[w,c,r,P], pooled_survivors[w,c,r,P]
                     the pooling steps (solver.families.pooling)
purchased[r,g]       0 <= . <= max_gpus[r,g], GPUs bought beyond the existing fleet
"""

from solver.lp import LinearProgram
from solver.sets import ProgramSets


def add_replica_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """replicas[w,c,r] for every pool."""
    for pool in sets.pools:
        lp.add_variable(
            sets.replicas(pool.workload, pool.candidate, pool.region),
            upper=pool.max_replicas,
            integer=True,
        )


def add_routing_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """served[f,w,o,d] for every allowed route, and the mode split of each region's load."""
    for (f, w), pairs in sets.routes.items():
        for o, d, _ in pairs:
            lp.add_variable(sets.served(f, w, o, d))
    for f in sets.routing_scenarios:
        for (w, d), modes in sets.modes.items():
            if len(modes) > 1 and (f.name, w, d) in sets.inflow:
                for mode in modes:
                    lp.add_variable(sets.mode_load(f.name, w, d, mode))


def add_zone_survivor_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """zone_survivors[w,c,r] for the pools of every region whose zone loss is a scenario."""
    for r in sets.zone_regions:
        for pool in sets.pools:
            if pool.region == r:
                lp.add_variable(
                    sets.zone_survivors(pool.workload, pool.candidate, r),
                    upper=pool.max_replicas,
                    integer=True,
                )


def add_pool_used_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_used[w,c,r] binaries (survive: replica)."""
    if not sets.survives_replica_loss:
        return
    for pool in sets.pools:
        lp.add_variable(
            sets.pool_used(pool.workload, pool.candidate, pool.region), upper=1, integer=True
        )


def add_purchase_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """purchased[r,g] for every offer."""
    for (r, g), offer in sets.offers.items():
        lp.add_variable(sets.purchased(r, g), upper=offer.max_gpus)
