"""The variables of the fleet program.

replicas[w,c,r]      integer, 0 <= . <= floor((existing + max_gpus)[r,g(c)] / gpus(c))
                     replicas of candidate c serving workload w in region r; only
                     where r offers c's GPU type (the decision)
served[f,w,o,d]      >= 0, requests/s of region o's users of w served in d in
                     scenario f; only over routes the latency policy allows (and
                     with `scenario_rows: cuts`, in `none` only)
<mode>[f,w,d]        >= 0, requests/s of d's load of w carried by one serving mode
                     (`unified`, `disagg[-p]`); only where d offers several modes
zone_survivors[w,c,r] integer >= 0, replicas of a pool left when r loses a zone
                     (survive: zone)
pool_used[w,c,r]     binary, 1 when the pool has a replica (survive: replica, or
                     policy.max_configs_per_pool)
pool_at_least[w,c,r,P], pooled[w,c,r,P], pooled_survivors[w,c,r,P]
                     the pooling steps (solver.program.families.pooling)
purchased[r,g]       0 <= . <= max_gpus[r,g], GPUs bought beyond the existing fleet
                     (no upper bound in the elastic program, solver.program.elastic)

Each kind of column has its index type (solver.program.row_names.Index): `ServedColumn(f, w, o,
d).name()` is `served[f,w,o,d]`. replicas[...] is solver.program.row_names.ReplicasColumn (the
verifier names it too), zone_survivors[...] is solver.program.families.zone.ZoneSurvivorsIndex
(its row has the same name), the pooling columns are in solver.program.families.pooling.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import LinearProgram
from solver.program.row_names import Index, ReplicasColumn, split_name
from solver.program.sets import Mode, ProgramSets


@dataclass(frozen=True)
class ServedColumn(Index):
    """served[f,w,o,d]: requests/s of o's users of w served in d under f."""

    family: ClassVar[str] = "served"
    scenario: str
    workload: str
    origin: str
    region: str


@dataclass(frozen=True)
class ModeLoadColumn(Index):
    """unified[f,w,d] / disagg[f,w,d] / disagg-fp8[f,w,d]: d's load of w carried by one
    serving mode; the mode's name is the family."""

    family: ClassVar[str] = "unified"
    mode: str
    scenario: str
    workload: str
    region: str

    @classmethod
    def of(cls, f: str, w: str, d: str, mode: Mode) -> "ModeLoadColumn":
        """The load column of `mode` in region d."""
        return cls(mode.name, f, w, d)

    @classmethod
    def owns(cls, family: str) -> bool:
        """`unified`, `disagg` and `disagg-<precision>`."""
        return family in ("unified", "disagg") or family.startswith("disagg-")

    def name(self) -> str:
        """`<mode>[f,w,d]`."""
        return f"{self.mode}[{self.scenario},{self.workload},{self.region}]"

    @classmethod
    def parse(cls, name: str) -> "ModeLoadColumn":
        """The index of `<mode>[f,w,d]`."""
        mode, parts = split_name(name)
        if not cls.owns(mode) or len(parts) != 3:
            raise ValueError(f"{name!r} is not a mode load <mode>[scenario,workload,region]")
        return cls(mode, *parts)


@dataclass(frozen=True)
class PoolUsedColumn(Index):
    """pool_used[w,c,r]: 1 when the pool has any replica (survive: replica)."""

    family: ClassVar[str] = "pool_used"
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class PurchasedColumn(Index):
    """purchased[r,g]: GPUs of type g bought in r beyond the existing fleet."""

    family: ClassVar[str] = "purchased"
    region: str
    gpu: str


def add_replica_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """replicas[w,c,r] for every pool."""
    for pool in sets.pools:
        lp.add_variable(
            ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name(),
            upper=pool.max_replicas,
            integer=True,
        )


def add_routing_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """served[f,w,o,d] for every allowed route, and the mode split of each region's load."""
    routed = {f.name for f in sets.routed_scenarios}
    for (f, w), pairs in sets.routes.items():
        if f not in routed:
            continue
        for o, d, _ in pairs:
            lp.add_variable(ServedColumn(f, w, o, d).name())
    for f in sets.routed_scenarios:
        for (w, d), modes in sets.modes.items():
            if len(modes) > 1 and (f.name, w, d) in sets.inflow:
                for mode in modes:
                    lp.add_variable(ModeLoadColumn.of(f.name, w, d, mode).name())


def add_zone_survivor_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """zone_survivors[w,c,r] for the pools of every region whose zone loss is a scenario."""
    for r in sets.zone_regions:
        for pool in sets.pools:
            if pool.region == r:
                lp.add_variable(
                    ZoneSurvivorsIndex(pool.workload, pool.candidate.key, r).name(),
                    upper=pool.max_replicas,
                    integer=True,
                )


def add_pool_used_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_used[w,c,r] binaries (survive: replica, or a limit on configurations)."""
    if not sets.needs_pool_used:
        return
    for pool in sets.pools:
        lp.add_variable(
            PoolUsedColumn(pool.workload, pool.candidate.key, pool.region).name(),
            upper=1,
            integer=True,
        )


def add_purchase_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """purchased[r,g] for every offer (unbounded above in the elastic program)."""
    for (r, g), offer in sets.offers.items():
        upper = None if sets.slack else offer.max_gpus
        lp.add_variable(PurchasedColumn(r, g).name(), upper=upper)
