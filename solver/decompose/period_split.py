"""The periods program split where only the commitment joins its periods
(solver.decompose.by_period reads the split; its text has the math).

Take the committed columns y (`committed[r,g]`, `committed_servers[r,g]`) out of the
periods program (solver.time.periods): its rows fall apart into blocks, the connected
components of the rows over their other columns, one per period where nothing else
joins them (batch work and dedicated batch replicas join the periods). The rows over y
alone (`committed_whole`) tie each offer's GPUs to its servers; a block sees y through
its cover rows only (`gpu_cover`: committed + on_demand - used >= -existing).
"""

import math
from dataclasses import dataclass

from solver.program.families.pricing import (
    CommittedColumn,
    CommittedServersColumn,
    GpuCoverRow,
    OnDemandColumn,
    OnDemandServersColumn,
)
from solver.program.lp import LinearProgram, Sense


@dataclass(frozen=True)
class Offer:
    """One committed offer: its GPU column, its servers column (None: single GPUs), the
    GPUs per level, its lowest and highest level and the row that links its GPUs to its
    servers (None: single GPUs)."""

    gpus: str
    servers: str | None
    per_level: int
    lowest: int
    highest: int
    link: str | None = None

    @property
    def levels(self) -> range:
        """Its levels, lowest first."""
        return range(self.lowest, self.highest + 1)


@dataclass(frozen=True)
class Cover:
    """A block's cover row that names the commitment, with its on-demand columns."""

    row: str
    on_demand: str
    servers: str | None
    committed: str


@dataclass(frozen=True)
class Block:
    """One independent part of the program once the commitment is taken out."""

    columns: tuple[str, ...]
    """Its own columns (no committed column)."""
    rows: tuple[str, ...]
    covers: tuple[Cover, ...]


@dataclass(frozen=True)
class Split:
    """The blocks and the committed offers of a periods program."""

    offers: tuple[Offer, ...]
    blocks: tuple[Block, ...]


LARGEST_SHARE = 0.5
"""The share of the columns above which one block is most of the program: the rounds
would solve it again and again, and the whole program is solved instead."""


def split(lp: LinearProgram) -> Split | None:
    """The blocks of `lp` (the module text); None where there is no commitment, where
    fewer than two blocks remain or one holds more than `LARGEST_SHARE` of the columns,
    or where a committed column sits in a row other than a cover row or its
    whole-server link (the program is then solved whole)."""
    linked = {
        name
        for name in lp.variables
        if _family(name) in (CommittedColumn.family, CommittedServersColumn.family)
    }
    if not linked:
        return None
    parent = {name: name for name in lp.variables if name not in linked}

    def find(name: str) -> str:
        root = name
        while parent[root] != root:
            root = parent[root]
        while parent[name] != root:
            parent[name], name = root, parent[name]
        return root

    links = []
    for row in lp.constraints.values():
        own = [v for v in row.coefficients if v not in linked]
        if not own:
            links.append(row.name)
            continue
        first = find(own[0])
        for other in own[1:]:
            root = find(other)
            if root != first:
                parent[root] = first
    offers = _offers(lp, linked, links)
    if offers is None:
        return None
    columns: dict[str, list[str]] = {}
    for name in parent:
        columns.setdefault(find(name), []).append(name)
    rows: dict[str, list[str]] = {}
    covers: dict[str, list[Cover]] = {}
    for row in lp.constraints.values():
        own = next((v for v in row.coefficients if v not in linked), None)
        if own is None:
            continue
        root = find(own)
        rows.setdefault(root, []).append(row.name)
        if len(row.coefficients) > sum(v not in linked for v in row.coefficients):
            cover = _cover(lp, row.name, linked)
            if cover is None:
                return None
            covers.setdefault(root, []).append(cover)
    blocks = tuple(
        Block(tuple(names), tuple(rows.get(root, ())), tuple(covers.get(root, ())))
        for root, names in columns.items()
    )
    largest = max(len(block.columns) for block in blocks)
    if len(blocks) < 2 or largest > LARGEST_SHARE * (len(lp.variables) - len(linked)):
        return None
    return Split(offers, blocks)


def _family(name: str) -> str:
    return name.partition("[")[0]


def _cover(lp: LinearProgram, name: str, linked: set[str]) -> Cover | None:
    """The cover row `name` as the rounds read it (None: not a cover row of the form
    committed + on_demand - used >= -existing)."""
    row = lp.constraints[name]
    if _family(name) != GpuCoverRow.family or row.sense is not Sense.GE:
        return None
    index = GpuCoverRow.parse(name)
    committed = CommittedColumn(index.region, index.gpu).at(None, index.month).name()
    on_demand = OnDemandColumn(index.region, index.gpu).at(index.period, index.month).name()
    servers = OnDemandServersColumn(index.region, index.gpu).at(index.period, index.month).name()
    named = [v for v in row.coefficients if v in linked]
    if named != [committed] or row.coefficients[committed] != 1.0:
        return None
    if row.coefficients.get(on_demand) != 1.0:
        return None
    return Cover(name, on_demand, servers if servers in lp.variables else None, committed)


def _offers(lp: LinearProgram, linked: set[str], links: list[str]) -> tuple[Offer, ...] | None:
    """The committed offers with their levels (None where a row over the commitment
    alone is not the link of one offer's GPUs to its servers: y - n servers = 0)."""
    servers_of: dict[str, tuple[str, int, str]] = {}
    for name in links:
        row = lp.constraints[name]
        gpus = [v for v in row.coefficients if _family(v) == CommittedColumn.family]
        whole = [v for v in row.coefficients if _family(v) == CommittedServersColumn.family]
        if len(gpus) != 1 or len(whole) != 1 or row.sense is not Sense.EQ or row.rhs != 0:
            return None
        n = -row.coefficients[whole[0]] / row.coefficients[gpus[0]]
        if n < 1 or n != round(n):
            return None
        servers_of[gpus[0]] = (whole[0], round(n), name)
    offers = []
    for name in sorted(v for v in linked if _family(v) == CommittedColumn.family):
        var = lp.variables[name]
        if var.upper is None:
            return None
        servers, n, link = servers_of.get(name, (None, 1, None))
        lowest, highest = var.lower / n, var.upper / n
        if servers is not None:
            whole = lp.variables[servers]
            lowest = max(lowest, whole.lower)
            highest = min(highest, math.inf if whole.upper is None else whole.upper)
        low, high = math.ceil(lowest - 1e-9), math.floor(highest + 1e-9)
        if high < low:
            return None
        offers.append(Offer(name, servers, n, low, high, link))
    named = {o.gpus for o in offers} | {o.servers for o in offers if o.servers}
    return tuple(offers) if named == linked else None
