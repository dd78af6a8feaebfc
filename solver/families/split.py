"""mode_split[f,w,d]: a region's load is split between its serving modes.

    sum_{m in modes(w,d)} <m>[f,w,d] = sum_o served[f,w,o,d]     where d has >= 2 modes

Modes are `unified` replicas and each disaggregated pair `disagg[-p]` (a prefill pool and
a decode pool of weight precision p, possibly on different GPU types). Where a region
offers one mode only, that mode carries everything served there and no row is needed.
"""

from solver.families import register
from solver.lp import LinearProgram, Sense
from solver.sets import ProgramSets

MODE_SPLIT = register(
    "mode_split",
    "[scenario,workload,region]",
    "the load served in the region is split between unified and disaggregated serving",
    "$/month per request/s",
    reported=False,
)


def add_mode_split(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload and region offering more than one mode."""
    for f in sets.routing_scenarios:
        for (w, d), modes in sets.modes.items():
            origins = sets.inflow.get((f.name, w, d), ())
            if len(modes) < 2 or not origins:
                continue
            terms = {sets.mode_load(f.name, w, d, mode): 1.0 for mode in modes}
            for o in origins:
                terms[sets.served(f.name, w, o, d)] = -1.0
            lp.add_constraint(
                f"mode_split[{f.name},{w},{d}]", MODE_SPLIT.name, terms, Sense.EQ, 0.0
            )
