"""One weight precision per workload (`policy.one_precision_per_workload`): every pool of a
workload, in every region and phase, serves the same weights, so that its users get the
same model's answers wherever they are routed.

    precision_used[w,p]          binary: workload w runs some replica at weight precision p
    one_precision[w]:            sum_p precision_used[w,p] <= 1
    precision_open[w,c,r]:       replicas[w,c,r] - M_c x precision_used[w,p(c)] <= 0

M_c is the pool's own bound on replicas (as pool_open's), so the big-M is tight. Rows are
written only for a workload whose candidates span more than one weight precision. Without
the option a plan may mix them; the plan then says so in its notes
(`solver.readback.assign.mixed_precision_notes`). The duals say nothing (the binaries are
fixed when the plan is priced): not reported among the binding constraints.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, OnePrecisionRow, ReplicasColumn
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class PrecisionUsedColumn(Index):
    """precision_used[w,p]: 1 when workload w runs a replica at weight precision p."""

    family: ClassVar[str] = "precision_used"
    workload: str
    precision: str


@dataclass(frozen=True)
class PrecisionOpenRow(Index):
    """precision_open[w,c,r]: a pool with replicas marks its precision used."""

    family: ClassVar[str] = "precision_open"
    workload: str
    candidate: str
    region: str


ONE_PRECISION = register(
    OnePrecisionRow,
    "the workload runs one weight precision (policy.one_precision_per_workload)",
    "$/month per precision",
    reported=False,
)
PRECISION_OPEN = register(
    PrecisionOpenRow,
    "a pool with replicas marks its weight precision used",
    "$/month per replica",
    reported=False,
)


def mixed_precisions(sets: ProgramSets) -> dict[str, tuple[str, ...]]:
    """Workload -> its candidates' weight precisions, for workloads the option binds
    (the option on, and more than one precision among the workload's pools)."""
    if not sets.instance.policy.one_precision_per_workload:
        return {}
    seen: dict[str, set[str]] = {}
    for pool in sets.pools:
        seen.setdefault(pool.workload, set()).add(str(pool.candidate.precision))
    return {w: tuple(sorted(p)) for w, p in seen.items() if len(p) > 1}


def add_precision_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """precision_used[w,p] for every workload the option binds."""
    for w, precisions in mixed_precisions(sets).items():
        for p in precisions:
            lp.add_variable(PrecisionUsedColumn(w, p).name(), upper=1, integer=True)


def add_one_precision(lp: LinearProgram, sets: ProgramSets) -> None:
    """one_precision[w] and precision_open[w,c,r] (module docstring)."""
    bound = mixed_precisions(sets)
    for w, precisions in bound.items():
        terms = {PrecisionUsedColumn(w, p).name(): 1.0 for p in precisions}
        add_row(lp, OnePrecisionRow(w), terms, Sense.LE, 1.0)
    for pool in sets.pools:
        if pool.workload not in bound:
            continue
        w, key, r = pool.workload, pool.candidate.key, pool.region
        add_row(
            lp,
            PrecisionOpenRow(w, key, r),
            {
                ReplicasColumn(w, key, r).name(): 1.0,
                PrecisionUsedColumn(w, str(pool.candidate.precision)).name(): -float(
                    pool.max_replicas
                ),
            },
            Sense.LE,
            0.0,
        )
