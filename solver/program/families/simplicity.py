"""Simple pools: at most K replica configurations per workload, region and phase.

    configs_per_pool[w,d,phase]:  sum_{c in C_w(phase)} pool_used[w,c,d] <= K

with K = policy.max_configs_per_pool (1 by default; null: no row) and pool_used the
binary that pool_open (solver.program.families.replica) sets when a pool has replicas. A
phase is `unified`, `prefill` or `decode` (by precision when several pair up), as in
capacity[f,w,d,phase]: a region that serves w both unified and disaggregated has one
configuration for each phase. A row is written only where the phase has more than K
candidates.

The plan a procurement team can run has one kind of server image per pool; the price
of that simplicity is what the program with the limit lifted would save, which the
pipeline measures by solving that program too (solver.solve, the plan's `simplicity`).
The LP duals of these rows say nothing (pool_used is fixed when the plan is priced),
so the family is not reported among the binding constraints.
"""

from solver.program.families import add_row, register
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import ConfigsPerPoolRow
from solver.program.sets import ProgramSets

CONFIGS_PER_POOL = register(
    ConfigsPerPoolRow,
    "the phase mixes at most policy.max_configs_per_pool replica configurations",
    "$/month per configuration",
    reported=False,
)


def add_configs_per_pool(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per workload, region and phase with more candidates than the limit."""
    limit = sets.instance.policy.max_configs_per_pool
    if limit is None:
        return
    for (w, d), modes in sets.modes.items():
        seen: set[str] = set()
        for mode in modes:
            for phase in mode.phases:
                if phase.label in seen:
                    continue
                seen.add(phase.label)
                pools = sets.phase_pools(w, d, phase)
                if len(pools) <= limit:
                    continue
                terms = {PoolUsedColumn(w, p.candidate.key, d).name(): 1.0 for p in pools}
                add_row(lp, ConfigsPerPoolRow(w, d, phase.label), terms, Sense.LE, float(limit))
