"""hall[f,w,origins,phases]: a set of origins' users fits what its reachable regions carry.

With `scenario_rows: cuts` a rerouting scenario f (region or zone loss) has no routing
columns of its own. Its routing is a transport problem per workload w: each origin o
sends D[w,o] requests/s along the routes f allows (o -> d), each region d splits what it
receives between its serving modes m, and each mode carries at most what every phase
of it carries,

    load_f[w,d,m] x u^-1  <=  credit_f[w,d,phase]      for every phase of m

with credit_f the capacity rows' own terms (solver.program.families.capacity: q or q' at
the TTFT target less the round trip of rerouted users, pooling steps, zone survivors).
The credit depends on f only through which regions f may reroute users to, never on the
routing chosen, so the transport problem's capacities are linear in the program's
columns. By max-flow / min-cut (Hall's condition with capacities) it is feasible iff,
for every set U of origins and every choice of one phase p(d,m) per mode,

    sum_{d in N_f(U)} sum_{m in modes(w,d)} credit_f[w,d,p(d,m)]  >=  u^-1 x sum_{o in U} D[w,o]

with N_f(U) the regions f lets U's users reach. (For a fixed U the right choice is the
phase of least credit in each mode: the rows over all choices are the one row with
min_p, linearised.) These rows replace f's served, mode_split, demand and capacity rows
exactly: same feasible fleets, same optimum. There are exponentially many; the solve
(solver.decompose.scenario_cuts) adds only those a solution breaks, each found as a
minimum cut of the scenario's transport network (solver.program.transport).

A row's name lists its origins (`r00+r03`) and, where a mode has more than one phase,
the phase chosen in each such region (`r01:prefill`); `all` where every mode is unified.
Its dual is what one more request/s of the set's demand costs per month under f.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import product
from typing import ClassVar

from models.operations.scenarios import Scenario, ScenarioKind
from solver.program.families import add_row, register
from solver.program.families.pooling import pool_credit
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index
from solver.program.sets import Mode, Phase, ProgramSets

ENUMERATED_ORIGINS = 6
"""Origins of a workload up to which every Hall row of a scenario is added at once (at
most 2^6 - 1 sets, fewer distinct N(U))."""
ENUMERATED_PHASES = 16
"""Phase choices of one set's modes up to which each gets its row."""


@dataclass(frozen=True)
class HallRow(Index):
    """hall[f,w,origins,phases]."""

    family: ClassVar[str] = "hall"
    scenario: str
    workload: str
    origins: str
    """The set U, `+`-joined in region order."""
    phases: str
    """`all` (every mode unified), else `d:phase` `+`-joined for each mode of several phases."""


HALL = register(
    HallRow,
    "the users of these origins fit in what the surviving regions within their failover RTT carry",
    "$/month per request/s of demand",
)


@dataclass(frozen=True)
class HallCut:
    """One Hall row: the origins U and, per serving mode of N(U) (region, mode name), the
    phase whose credit stands for the mode."""

    scenario: Scenario
    workload: str
    origins: tuple[str, ...]
    phases: tuple[tuple[str, str, Phase], ...]
    """(region d, mode name, phase) for every mode of every region U may reach."""

    def index(self) -> HallRow:
        """The row's name, as the report reads it."""
        several = [f"{d}:{phase.label}" for d, _, phase in self.phases if phase.label != "unified"]
        return HallRow(
            self.scenario.name, self.workload, "+".join(self.origins), "+".join(several) or "all"
        )


class TransportCredit:
    """The credit terms of each (scenario, workload, region, phase), as the capacity rows
    write them. They depend on the scenario only through whether it hits the region's
    zone and the round trip of the users it may reroute there, so they are worked out
    (and valued at a solution) once per such pair, however many scenarios share it."""

    def __init__(self, sets: ProgramSets):
        self.sets = sets
        self._terms: dict[tuple, dict[str, float]] = {}
        self._valued: tuple[dict[str, float] | None, dict[tuple, float]] = (None, {})

    def _key(self, f: Scenario, w: str, d: str, phase: Phase) -> tuple:
        zone_hit = f.kind is ScenarioKind.ZONE and f.region == d
        return (w, d, phase.label, zone_hit, self.sets.rerouted_rtt.get((f.name, w, d), 0.0))

    def terms(self, f: Scenario, w: str, d: str, phase: Phase) -> dict[str, float]:
        """credit_f[w,d,phase]: sum over the phase's pools in d of their credit terms."""
        key = self._key(f, w, d, phase)
        found = self._terms.get(key)
        if found is not None:
            return found
        sets = self.sets
        terms: dict[str, float] = {}
        for pool in sets.phase_pools(w, d, phase):
            for var, coef in pool_credit(pool, key[3], sets.failover_tiers(f.name, pool)).items():
                terms[var] = terms.get(var, 0.0) + coef
        self._terms[key] = terms
        return terms

    def value(self, f: Scenario, w: str, d: str, phase: Phase, values: dict[str, float]) -> float:
        """credit_f[w,d,phase] at a solution (requests/s of capacity, >= 0); valued once
        per solution (the same `values` object) and key."""
        held, memo = self._valued
        if held is not values:
            memo = {}
            self._valued = (values, memo)
        key = self._key(f, w, d, phase)
        found = memo.get(key)
        if found is None:
            terms = self.terms(f, w, d, phase)
            found = max(0.0, sum(coef * values.get(var, 0.0) for var, coef in terms.items()))
            memo[key] = found
        return found

    def modes(self, w: str, d: str) -> tuple[Mode, ...]:
        """The serving modes of w in d (none: d cannot serve w)."""
        return self.sets.modes.get((w, d), ())


def add_hall_row(lp: LinearProgram, credit: TransportCredit, cut: HallCut) -> str | None:
    """Add the cut's row; None (and nothing added) when a row of that name exists."""
    sets = credit.sets
    index = cut.index()
    name = index.name()
    if name in lp.constraints:
        return None
    terms: dict[str, float] = {}
    for d, _, phase in cut.phases:
        for var, coef in credit.terms(cut.scenario, cut.workload, d, phase).items():
            terms[var] = terms.get(var, 0.0) + coef
    demand = sum(sets.demand.get((cut.workload, o), 0.0) for o in cut.origins)
    add_row(lp, index, terms, Sense.GE, sets.load_per_capacity * demand)
    return name


def seed_cuts(sets: ProgramSets) -> list[HallCut]:
    """Rows worth having before the first solve, per cut scenario f and workload w.

    With at most `ENUMERATED_ORIGINS` origins, every row there is: each distinct N(U)
    once, with U its closure (every origin whose reach lies within N(U): the strongest
    row of that N), and every choice of phases where the modes of N(U) leave at most
    `ENUMERATED_PHASES` (else one row per phase position). The integer solve then breaks
    none of them (a handful of rows: 3 regions give at most 3 sets per scenario).

    With more origins: every origin together (the survivors carry the whole demand) and
    the closure of the lost region's own users (they must fit in the regions within
    their failover RTT), one row per phase position (the first phase of each mode, then
    the second); the rest as solutions break them.
    """
    cuts = []
    for f in sets.cut_scenarios:
        for w in sets.workloads:
            origins = [o for o in sets.regions if (w, o) in sets.demand]
            if len(origins) <= ENUMERATED_ORIGINS:
                groups = [
                    tuple(o for o, keep in zip(origins, mask, strict=True) if keep)
                    for mask in product((False, True), repeat=len(origins))
                    if any(mask)
                ]
            else:
                groups = [tuple(origins), *([(f.region,)] if f.region in origins else [])]
            seen: set[tuple[str, ...]] = set()
            for group in groups:
                reach = reachable(sets, f, w, group)
                if not reach or tuple(reach) in seen:
                    continue  # nothing to choose (the pre-solve checks name it), or known
                seen.add(tuple(reach))
                closed = closure(sets, f, w, reach)
                for phases in _phase_choices(sets, w, reach):
                    cuts.append(HallCut(f, w, closed, phases))
    return cuts


def _phase_choices(
    sets: ProgramSets, w: str, reach: list[str]
) -> list[tuple[tuple[str, str, Phase], ...]]:
    """Every choice of one phase per mode of the regions in `reach` when there are at
    most `ENUMERATED_PHASES`, else one per phase position."""
    modes = [(d, m) for d in reach for m in sets.modes[(w, d)]]
    count = 1
    for _, m in modes:
        count *= len(m.phases)
    if count <= ENUMERATED_PHASES:
        return [
            tuple((d, m.name, p) for (d, m), p in zip(modes, chosen, strict=True))
            for chosen in product(*(m.phases for _, m in modes))
        ]
    deepest = max(len(m.phases) for _, m in modes)
    return [
        tuple((d, m.name, m.phases[min(position, len(m.phases) - 1)]) for d, m in modes)
        for position in range(deepest)
    ]


def closure(sets: ProgramSets, f: Scenario, w: str, regions: Iterable[str]) -> tuple[str, ...]:
    """The origins with demand all of whose destinations under f lie in `regions`, in
    region order: the largest U with N(U) within them (the strongest Hall row there)."""
    within = set(regions)
    outside = {o for o, d, _ in sets.routes[(f.name, w)] if d not in within}
    return tuple(o for o in sets.regions if (w, o) in sets.demand and o not in outside)


def reachable(sets: ProgramSets, f: Scenario, w: str, origins: tuple[str, ...]) -> list[str]:
    """N_f(U): the regions serving w that f lets some origin of U reach, in region order."""
    wanted = set(origins)
    found = {d for o, d, _ in sets.routes[(f.name, w)] if o in wanted}
    return [d for d in sets.regions if d in found]


def copy_hall_rows(source: LinearProgram, target: LinearProgram, workloads: Iterable[str]) -> None:
    """The Hall rows of `source` whose workload is one of `workloads`, added to `target`
    (a part of the program over the same columns: solver.decompose.workload_parts)."""
    wanted = set(workloads)
    for row in source.constraints.values():
        if row.family == HALL.name and HallRow.parse(row.name).workload in wanted:
            target.add_constraint(row.name, row.family, row.coefficients, row.sense, row.rhs)
