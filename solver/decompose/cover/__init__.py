"""A plan of the fleet program built without a solver: the cover that a solve keeps when
the clock stopped every program before a plan.

The fleet program covers loads: every demand row sends its users somewhere, and every
capacity row asks the pools of a (workload, region, phase) for at least the load routed
there, in every scenario. So a plan exists whenever the supply allows, and one is
found without a search (`covering_plan`):

    1. routing: users served in their own region where they may be; where they may not
       (their region lost), first into what the regions they may reach already carry
       for the workload in some other scenario, then the rest to the cheapest of them
    2. sizing: each pool (workload, region, phase) takes the configuration whose fewest
       replicas carry its load in every scenario (every pooling step and zone survivor
       credited as the pool's own rows allow) at the least cost on top of the pools
       chosen before, largest load first, then a few passes re-choosing each with the
       others held; the cost is either each GPU at its price or whole servers bought on
       top of the servers the others use (both are tried, the cheaper kept)
    3. any covering row still short (a Hall row of the failover scenarios by cuts) raises
       the chosen pools it names, the most credit per dollar first, one replica at a time
    4. purchases: what the replicas use beyond the existing fleet, in whole servers

and the values are checked against every row and bound of the program
(solver.program.lp.plan_of): a program with a family the cover does not value gets no
cover rather than a wrong one.

Its bound, region by region (`bounds.region_bounds`): each pool's cheapest configuration's
fewest replicas for the loads without a routing choice (the scenario without failover), less
the existing GPUs at their price. Measured: 20 x 30 x 6 without failover, 18 s limit: a plan
1.054 x the optimum (gap stated 8.8%). Small generated instances: 1.0-1.06 x without failover,
1.2-1.4 x with region or zone loss. A pool its bounds close is never raised."""

from solver.decompose.cover.plan import Cover, bounds_by_region, covering_plan

__all__ = ["Cover", "bounds_by_region", "covering_plan"]
