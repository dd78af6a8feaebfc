"""The integer program: index sets, typed row names, the solver-neutral LP, the constraint
families (one module each, `families/`) and `build_program`, the contents list.

Imports: models/, solver.candidates, solver.colocation (templates), solver.settings."""
