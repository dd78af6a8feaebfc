"""Why the plan is what it is: explanation, levers, compare, infeasibility diagnosis, cost
attribution, capacity reports and what the HTML report draws.

Imports: models.schema, models.io, models.physics, models.serving, models.operations;
solver.solve, solver.settings and solver.errors (explain, levers and compare solve again),
solver.program, solver.backends, solver.decompose and solver.readback (the re-solves and
diagnosis), solver.candidates, solver.plan, solver.verify and solver.simulate (the engine
effects explain names), solver.workers (re-solves in worker processes), solver.stages (a
lever builds its table and program with the pipeline's stages before it solves). solver.readback
imports cost attribution from here."""
