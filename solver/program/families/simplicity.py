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

One weight precision per workload (`policy.one_precision_per_workload`): every pool of
a workload, in every region and phase, serves the same weights, so that its users get
the same model's answers wherever they are routed.

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
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import (
    ConfigsPerDayRow,
    ConfigsPerPoolRow,
    Index,
    OnePrecisionRow,
    ReplicasColumn,
)
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


@dataclass(frozen=True)
class DayConfigColumn(Index):
    """day_config[w,c,d]: 1 when configuration c may run for w in d this day."""

    family: ClassVar[str] = "day_config"
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class ConfigInDayRow(Index):
    """config_in_day[w,c,d]: a period's open pool is one of the day's configurations."""

    family: ClassVar[str] = "config_in_day"
    workload: str
    candidate: str
    region: str


CONFIGS_PER_DAY = register(
    ConfigsPerDayRow,
    "the phase runs at most policy.max_configs_per_pool configurations all day",
    "$/month per configuration",
    reported=False,
)
CONFIG_IN_DAY = register(
    ConfigInDayRow,
    "a period's pool runs one of the day's configurations",
    "$/month per pool",
    reported=False,
)

DAY_ROW_FAMILIES = frozenset({ConfigsPerDayRow.family, ConfigInDayRow.family})
"""The families this module writes (what lifting the limit drops)."""


def day_phases(
    periods: list[tuple[int, ProgramSets]], limit: int
) -> dict[tuple[str, str, str], dict[str, list[int]]]:
    """(w, d, phase) -> candidate key -> the periods (first hours) whose program has its
    pool there, for the phases with more than `limit` candidates over the day."""
    found: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for hour, sets in periods:
        for (w, d), modes in sets.modes.items():
            seen: set[str] = set()
            for mode in modes:
                for phase in mode.phases:
                    if phase.label in seen:
                        continue
                    seen.add(phase.label)
                    keys = found.setdefault((w, d, phase.label), {})
                    for pool in sets.phase_pools(w, d, phase):
                        keys.setdefault(pool.candidate.key, []).append(hour)
    return {phase: keys for phase, keys in found.items() if len(keys) > limit}


def add_day_configs(lp: LinearProgram, periods: list[tuple[int, ProgramSets]]) -> None:
    """The day columns and rows of the module text (`periods`: each period's first hour
    and program sets); none without a limit or with a single period (its
    configs_per_pool rows are the day's)."""
    if len(periods) < 2:
        return
    limit = periods[0][1].instance.policy.max_configs_per_pool
    if limit is None:
        return
    for (w, d, label), keys in day_phases(periods, limit).items():
        day = {}
        for key, hours in keys.items():
            column = lp.add_variable(DayConfigColumn(w, key, d).name(), upper=1, integer=True)
            day[column] = 1.0
            for hour in hours:
                used = PoolUsedColumn(w, key, d).at(hour).name()
                if used in lp.variables:
                    terms = {used: 1.0, column: -1.0}
                    add_row(lp, ConfigInDayRow(w, key, d).at(hour), terms, Sense.LE, 0.0)
        add_row(lp, ConfigsPerDayRow(w, d, label), day, Sense.LE, float(limit))
