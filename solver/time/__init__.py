"""The program in time: the horizon (horizon.py: which periods of the day and which month
one program covers), the periods program (periods.py) as the pipeline's program step
(step.py), months, and the hourly plan read back from the solved program (readback/:
batch soaking, spot and failover start, and what the hourly plan reports: whole servers
and power as a static plan states them, the shadow prices of the periods program, the
idle share over the GPUs paid).

Imports: models.schema, models.operations, models.serving (the phase roles);
solver.program, solver.candidates, solver.readback, solver.plan, solver.verify (the hour
verifier), solver.backends, solver.settings, solver.errors, solver.analysis
(infeasibility diagnosis), solver.stages (the pipeline's stages: candidates, guards,
deadline, solve), solver.decompose (the periods program solved period by period:
by_period) and solver.colocation (the periods' shared group templates, built once:
templates)."""
