"""demand[f,w,o]: every region's users are served, in every scenario.

    sum_{d : (f,w,o,d) is a route} served[f,w,o,d] = D[w,o]      for all f, w, o with D > 0

The routes already encode the latency policy: in `none` only d = o; in a failure
scenario any d within `max_failover_rtt_ms` of o (never the lost region). Its dual is
what one more request/s of peak demand from o costs per month under f.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.variables import ServedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import DemandRow, Index
from solver.program.sets import ProgramSets

DEMAND = register(
    DemandRow,
    "the peak requests/s of the origin's users are served somewhere the latency policy allows",
    "$/month per request/s of demand",
)


@dataclass(frozen=True)
class UnservedColumn(Index):
    """unserved[f,w,o]: requests/s of o's users of w left unserved under f (elastic
    program only, solver.program.elastic)."""

    family: ClassVar[str] = "unserved"
    scenario: str
    workload: str
    origin: str


def add_demand_met(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per scenario, workload and origin region with demand (elastic: with its
    priced unserved column)."""
    for f in sets.routed_scenarios:
        by_origin: dict[tuple[str, str], list[str]] = {}  # one pass over the routes
        for w in {w for w, _ in sets.demand}:
            for o, d, _ in sets.routes[(f.name, w)]:
                by_origin.setdefault((w, o), []).append(d)
        for (w, o), rate in sets.demand.items():
            terms = {ServedColumn(f.name, w, o, d).name(): 1.0 for d in by_origin.get((w, o), ())}
            if sets.slack:
                unserved = lp.add_variable(UnservedColumn(f.name, w, o).name())
                terms[unserved] = 1.0
                lp.add_objective({unserved: sets.slack.demand_penalty})
            add_row(lp, DemandRow(f.name, w, o), terms, Sense.EQ, rate)
