"""The plan schema: what to run where, what it costs, what binds it. The vocabulary every
later stage reads, and the only part of solver/ besides the row names that the verifier reads:
the plan itself (schema), the records it is made of (records) and those of time planning
(time_records), and the buyer's summary read off them (summary).

Imports: models.physics and models.serving only (the precision and replica records a plan
names) and models.schema.quantities (a count is a strict number, never `true`); nothing
from solver/."""
