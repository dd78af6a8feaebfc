"""Many solves: a folder of instances against their goldens (batch), a grid of changes (sweep).

Imports: models.schema, models.io, models.physics (a golden's fingerprint hashes the
catalog); solver.solve, solver.settings, solver.errors, solver.backends, solver.plan,
solver.verify (the hour verifier), solver.workers (the sweep's worker processes) and
solver.time (an hourly plan restated at another point's prices, solver.time.reprice)."""
