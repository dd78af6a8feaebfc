"""Shared replica groups (policy.colocation): which workloads share, and how much.

Templates t (solver.colocation.groups): members M_t on one layout of gpus(t) GPUs of type g(t),
with a[w,t] the requests/s of member w one group replica carries within every member's
SLO, the others at theirs (down-closed, so safe as a linear coefficient). A group exists
in region r when r offers g(t) and every member may be routed to r with a unified mode
there.

    groups[t,r]              integer, 0 <= . <= M = floor(available[r,g(t)] / gpus(t))
    group_zone_survivors[t,r] integer >= 0                        (r's zone loss a scenario)
    group_used[t,r]          binary                               (survive: replica)

Rows, new:
    group_zone_survivors[t,r]:  Z x group_zone_survivors - (Z - 1) x groups <= 0
    group_open[t,r]:            groups - M x group_used <= 0
    group_spare[w,d,t]:         credit_w,d - a[w,t] x group_used[t,d] >= load_none[w,d,unified]
                                (the unified phase without one replica of group t)

and the group credit joins the rows that already exist:
    capacity[f,w,d,unified]     + sum_{t in T_w} a[w,t] x alive_f(groups[t,d])
    replica_spare[w,d,unified,c] + sum_{t in T_w} a[w,t] x groups[t,d]
    gpu_supply[r,g], purchase[r,g]   +- gpus(t) x groups[t,r]   (g = g(t))
    objective                    + epsilon x gpus(t) x groups[t,r]    (the tie-break)

with alive_f = groups in an intact region, group_zone_survivors when d loses a zone, and
no row at all when d is lost (shared groups fail over like any pool). credit_w,d is the
unified phase's full credit: its dedicated pools (pooling steps included) plus every
group of w in d. A group's loss takes a replica from every member at once; each member's
group_spare row then holds on its own, which is what N+1 asks of each workload.

Load packing is the capacity rows (each member's load within a[w,t] per group replica,
beside its dedicated pools); memory packing is inside a[w,t] (a template exists only
when every member's weights and p99 KV fit with the reserves). The group's share of a
region's load of w is routed in proportion to credit (routing_weight), so each group
replica carries at most a[w,t] of each member in every scenario.
"""

from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar

from models.operations.scenarios import ScenarioKind
from solver.colocation.groups import GroupTable, Template
from solver.program.families import add_row, register
from solver.program.families.capacity import CapacityRow
from solver.program.families.pooling import pool_credit
from solver.program.families.split import load_terms
from solver.program.families.supply import PurchaseRow
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import (
    GpuSupplyRow,
    GroupsColumn,
    GroupSpareRow,
    Index,
    ReplicaSpareRow,
)
from solver.program.sets import ProgramSets

UNIFIED = "unified"


@dataclass(frozen=True)
class GroupZoneSurvivorsIndex(Index):
    """group_zone_survivors[t,r]: the row, and the column of the group's zone survivors."""

    family: ClassVar[str] = "group_zone_survivors"
    template: str
    region: str


@dataclass(frozen=True)
class GroupUsedColumn(Index):
    """group_used[t,r]: 1 when the group has a replica in r (survive: replica)."""

    family: ClassVar[str] = "group_used"
    template: str
    region: str


@dataclass(frozen=True)
class GroupOpenRow(Index):
    """group_open[t,r]."""

    family: ClassVar[str] = "group_open"
    template: str
    region: str


GROUP_ZONE_SURVIVORS = register(
    GroupZoneSurvivorsIndex,
    "a shared group spread evenly over the region's zones keeps n - ceil(n / zones) "
    "replicas when its fullest zone is lost",
    "$/month per group replica",
    reported=False,
)
GROUP_OPEN = register(
    GroupOpenRow,
    "a shared group with replicas counts as used",
    "$/month per group replica",
    reported=False,
)
GROUP_SPARE = register(
    GroupSpareRow,
    "the workload's load in the region is still carried without one replica of the shared group",
    "$/month per request/s of load",
)


@dataclass(frozen=True)
class GroupSite:
    """Where a groups[t,r] variable exists."""

    template: Template
    region: str
    max_groups: int

    @property
    def column(self) -> str:
        """groups[t,r]."""
        return GroupsColumn(self.template.key, self.region).name()


@dataclass(frozen=True)
class GroupSets:
    """The group sites of a program."""

    sets: ProgramSets
    table: GroupTable

    @cached_property
    def sites(self) -> tuple[GroupSite, ...]:
        """Every (t, r) with r offering g(t) and a unified mode for every member."""
        found = []
        for t in self.table.templates:
            for r in self.sets.regions:
                offer = self.sets.offers.get((r, t.gpu))
                if offer is None or offer.available < t.gpus:
                    continue
                if all(
                    any(m.name == UNIFIED for m in self.sets.modes.get((w, r), ()))
                    and self.sets.max_load.get((w, r), 0.0) > 0
                    for w in t.members
                ):
                    found.append(GroupSite(t, r, offer.available // t.gpus))
        return tuple(found)

    def at(self, w: str, d: str) -> tuple[GroupSite, ...]:
        """The sites in d with w as a member."""
        return tuple(s for s in self.sites if s.region == d and w in s.template.members)


def add_group_variables(lp: LinearProgram, groups: GroupSets) -> None:
    """groups, group_zone_survivors and group_used columns."""
    zone_regions = set(groups.sets.zone_regions)
    for site in groups.sites:
        lp.add_variable(site.column, upper=site.max_groups, integer=True)
        if site.region in zone_regions:
            lp.add_variable(
                GroupZoneSurvivorsIndex(site.template.key, site.region).name(),
                upper=site.max_groups,
                integer=True,
            )
        if groups.sets.survives_replica_loss:
            lp.add_variable(
                GroupUsedColumn(site.template.key, site.region).name(), upper=1, integer=True
            )


def _extend(lp: LinearProgram, name: str, terms: dict[str, float]) -> None:
    """Add terms to an existing row (its other coefficients unchanged)."""
    row = lp.constraints[name]
    coefficients = dict(row.coefficients)
    for var, coef in terms.items():
        coefficients[var] = coefficients.get(var, 0.0) + coef
    lp.constraints[name] = replace(row, coefficients=coefficients)


def group_credit(groups: GroupSets, w: str, d: str, zone_hit: bool = False) -> dict[str, float]:
    """sum_t a[w,t] x alive(groups[t,d]) as terms."""
    terms = {}
    for site in groups.at(w, d):
        column = GroupZoneSurvivorsIndex(site.template.key, d).name() if zone_hit else site.column
        terms[column] = site.template.capacity_of(w)
    return terms


def add_group_rows(lp: LinearProgram, groups: GroupSets) -> None:
    """The new rows (zone survivors, open, spare) and the group credit in the rows that
    exist (capacity, replica_spare, gpu_supply, purchase) and in the tie-break."""
    sets = groups.sets
    if not groups.sites:
        return
    zone_regions = set(sets.zone_regions)
    for site in groups.sites:
        key, r = site.template.key, site.region
        if r in zone_regions:
            index = GroupZoneSurvivorsIndex(key, r)
            zones = sets.zones[r]
            add_row(
                lp,
                index,
                {index.name(): float(zones), site.column: -(zones - 1.0)},
                Sense.LE,
                0.0,
            )
        if sets.survives_replica_loss:
            add_row(
                lp,
                GroupOpenRow(key, r),
                {site.column: 1.0, GroupUsedColumn(key, r).name(): -float(site.max_groups)},
                Sense.LE,
                0.0,
            )
        gpus = float(site.template.gpus)
        _extend(lp, GpuSupplyRow(r, site.template.gpu).name(), {site.column: gpus})
        _extend(lp, PurchaseRow(r, site.template.gpu).name(), {site.column: -gpus})
        lp.add_objective({site.column: sets.tie_break_per_gpu * gpus})
    _credit_capacity_rows(lp, groups)
    if sets.survives_replica_loss:
        _credit_spare_rows(lp, groups)


def _credit_capacity_rows(lp: LinearProgram, groups: GroupSets) -> None:
    sets = groups.sets
    for f in sets.routing_scenarios:
        for w, d in sets.modes:
            name = CapacityRow(f.name, w, d, UNIFIED).name()
            if name not in lp.constraints:
                continue
            zone_hit = f.kind is ScenarioKind.ZONE and f.region == d
            _extend(lp, name, group_credit(groups, w, d, zone_hit))


def _credit_spare_rows(lp: LinearProgram, groups: GroupSets) -> None:
    sets = groups.sets
    for (w, d), modes in sets.modes.items():
        sites = groups.at(w, d)
        if not sites or ("none", w, d) not in sets.inflow:
            continue
        unified = next(m for m in modes if m.name == UNIFIED)
        credit = group_credit(groups, w, d)
        for pool in sets.pools_at.get((w, d), ()):
            name = ReplicaSpareRow(w, d, UNIFIED, pool.candidate.key).name()
            if name in lp.constraints:
                _extend(lp, name, credit)
        phase = unified.phases[0]
        full = {var: -1.0 for var in load_terms(sets, "none", w, d, unified)}
        for pool in sets.phase_pools(w, d, phase):
            full.update(pool_credit(pool))
        full.update(credit)
        for site in sites:
            key = site.template.key
            terms = dict(full)
            terms[GroupUsedColumn(key, d).name()] = -site.template.capacity_of(w)
            add_row(lp, GroupSpareRow(w, d, key), terms, Sense.GE, 0.0)
