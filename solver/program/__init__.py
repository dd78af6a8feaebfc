"""The integer program: index sets, typed row names, the solver-neutral LP, the constraint
families (one module each, `families/`) and `build_program`, the contents list; the
transport problem of a failover scenario at a solution (transport.py: a flow, or the Hall
row it breaks); each region's server cost as an integer level for the search to branch on
(cost_levels.py: added to the program a solve runs, beside the region rows).

Imports: models.schema, models.serving, models.operations; solver.candidates,
solver.colocation (templates), solver.settings, solver.errors, and solver.backends (export
writes MPS through HiGHS). lp.py imports nothing and row_names.py nothing from solver/:
the backends and the verifier read them."""
