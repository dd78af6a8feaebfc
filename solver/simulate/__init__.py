"""The discrete-event simulator: a pool of iteration-level engines behind a router, replaying
a plan's pools (or a disaggregated pair) against the analytic latency and the SLO, the
engine effects that bind and the burstiness a pool tolerates; arrivals open (Poisson or
gamma) or the benchmark tools' closed-loop client.

Imports: models.physics, models.serving, models.schema, models.operations (a failure
scenario's rerouted round trips) and solver.plan only: it checks the queue formulas from
outside the program."""
