"""The `fleetplan` command line: parse, call one library function, render, map errors to
exit codes. No arithmetic lives here.

Imports: cli.render (the tables) and the library each command fronts: models.schema,
models.io, models.physics, models.serving, models.calculators, models.profiles;
solver.solve, solver.settings,
solver.errors, solver.backends, solver.plan, solver.verify, solver.analysis, solver.studies,
solver.simulate, and for `export` solver.candidates and solver.program."""
