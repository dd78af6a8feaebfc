"""mode_split[f,w,d]: a region's load is split between its serving modes.

    sum_{m in modes(w,d)} <m>[f,w,d] = sum_o served[f,w,o,d]     where d has >= 2 modes

Modes are `unified` replicas and each disaggregated pair `disagg[-p]` (a prefill pool and
a decode pool of weight precision p, possibly on different GPU types). Where a region
offers one mode only, that mode carries everything served there and no row is needed.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.variables import ModeLoadColumn, ServedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index
from solver.program.sets import Mode, ProgramSets


@dataclass(frozen=True)
class ModeSplitRow(Index):
    """mode_split[f,w,d]."""

    family: ClassVar[str] = "mode_split"
    scenario: str
    workload: str
    region: str


MODE_SPLIT = register(
    ModeSplitRow,
    "the load served in the region is split between unified and disaggregated serving",
    "$/month per request/s",
    reported=False,
)


def add_mode_split(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload and region offering more than one mode."""
    for f in sets.routed_scenarios:
        for (w, d), modes in sets.modes.items():
            origins = sets.inflow.get((f.name, w, d), ())
            if len(modes) < 2 or not origins:
                continue
            terms = {ModeLoadColumn.of(f.name, w, d, mode).name(): 1.0 for mode in modes}
            for o in origins:
                terms[ServedColumn(f.name, w, o, d).name()] = -1.0
            add_row(lp, ModeSplitRow(f.name, w, d), terms, Sense.EQ, 0.0)


def load_terms(sets: ProgramSets, f: str, w: str, d: str, mode: Mode) -> dict[str, float]:
    """The load a mode carries in region d under f, as terms: its mode_split column when
    d has several modes, else everything served in d."""
    if len(sets.modes[(w, d)]) > 1:
        return {ModeLoadColumn.of(f, w, d, mode).name(): 1.0}
    return {ServedColumn(f, w, o, d).name(): 1.0 for o in sets.inflow.get((f, w, d), ())}
