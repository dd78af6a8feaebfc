"""The fleet over time and under failure: hourly demand, pricing tiers, autoscaling, procurement
over months, batch soaking, failure scenarios, SLO budgets and sites.

Imports: models.schema, models.physics and models.serving (pool capacity, pooling and
queueing)."""
