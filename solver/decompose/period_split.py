"""The periods program split where only the commitment joins its periods
(solver.decompose.by_period reads the split; its text has the math).

Take the committed columns y (`committed[r,g]`, `committed_servers[r,g]`) out of the
periods program (solver.time.periods): its rows fall apart into blocks, the connected
components of the rows over their other columns, one per period where nothing else
joins them (batch work and dedicated batch replicas join the periods). The rows over y
alone (`committed_whole`) tie each offer's GPUs to its servers; a block sees y through
its cover rows only (`gpu_cover`: committed + on_demand - used >= -existing).

The blocks' known solutions (`Known`) are re-costed at other levels of the commitment:
on demand re-set to cover what the levels leave, the rows that name it checked. The
priced pass's cuts bound the whole program alone (`priced_bound`), the master's
relaxation by offer.
"""

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from solver.program.families.pricing import (
    CommittedColumn,
    CommittedServersColumn,
    GpuCoverRow,
    OnDemandColumn,
    OnDemandServersColumn,
)
from solver.program.lp import LinearProgram, Sense, Variable
from solver.program.row_names import family_of, split_timed


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

    def level_of(self, gpus: float) -> int:
        """The lowest level that holds `gpus` GPUs, within its levels."""
        return min(self.highest, max(self.lowest, math.ceil(gpus / self.per_level - 1e-9)))


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
        if family_of(name) in (CommittedColumn.family, CommittedServersColumn.family)
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

    links, owned = [], []  # (row, its first column not committed, whether it names one)
    for row in lp.constraints.values():
        own = [v for v in row.coefficients if v not in linked]
        if not own:
            links.append(row.name)
            continue
        owned.append((row, own[0], len(own) < len(row.coefficients)))
        first = find(own[0])
        for other in own[1:]:
            root = find(other)
            if root != first:
                parent[root] = first
    offers = _offers(lp, linked, links)
    if offers is None:
        return None
    root_of = {name: find(name) for name in parent}
    columns: dict[str, list[str]] = {}
    for name, root in root_of.items():
        columns.setdefault(root, []).append(name)
    rows: dict[str, list[str]] = {}
    covers: dict[str, list[Cover]] = {}
    for row, own, covering in owned:
        root = root_of[own]
        rows.setdefault(root, []).append(row.name)
        if covering:
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


def savings(lp: LinearProgram, offer_of: dict[str, Offer], block: Block) -> dict[str, float]:
    """s_bo per offer the block covers (solver.decompose.by_period's module text): a
    level's on-demand price, summed over the block's periods, or inf where on demand
    cannot rent all the commitment may cover (`offer_of`: the offers by committed column)."""
    found = {}
    for cover in block.covers:
        offer = offer_of[cover.committed]
        n = offer.per_level
        price = lp.objective.get(cover.on_demand, 0.0)
        price += lp.objective.get(cover.servers or "", 0.0) / n
        rented = lp.variables[cover.servers or cover.on_demand].upper
        reach = math.inf if rented is None else rented * (n if cover.servers else 1)
        saving = n * price if reach >= n * offer.highest else math.inf
        found[cover.committed] = found.get(cover.committed, 0.0) + saving
    return found


def _cover(lp: LinearProgram, name: str, linked: set[str]) -> Cover | None:
    """The cover row `name` as the rounds read it (None: not a cover row of the form
    committed + on_demand - used >= -existing)."""
    row = lp.constraints[name]
    if family_of(name) != GpuCoverRow.family or row.sense is not Sense.GE:
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
        gpus = [v for v in row.coefficients if family_of(v) == CommittedColumn.family]
        whole = [v for v in row.coefficients if family_of(v) == CommittedServersColumn.family]
        if len(gpus) != 1 or len(whole) != 1 or row.sense is not Sense.EQ or row.rhs != 0:
            return None
        n = -row.coefficients[whole[0]] / row.coefficients[gpus[0]]
        if n < 1 or n != round(n):
            return None
        servers_of[gpus[0]] = (whole[0], round(n), name)
    offers = []
    for name in sorted(v for v in linked if family_of(v) == CommittedColumn.family):
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


def level_price(lp: LinearProgram, offer: Offer) -> float:
    """What one level of `offer` costs per month: its GPUs' and its server's."""
    price = lp.objective.get(offer.gpus, 0.0) * offer.per_level
    return price + lp.objective.get(offer.servers or "", 0.0)


def priced_bound(lp: LinearProgram, parts: Split, cuts: Iterable[tuple]) -> float:
    """A lower bound on the periods program from the priced pass's cuts alone, at most
    one a block, theta_b >= L_b - sum_(o,k) t_bok z[o,k] (`cuts`: (b, L_b, {(o, k):
    t_bok}, ...), t_bok = lambda_bo n_o k): the master with theta_b >= 0 dropped where a
    cut holds (a relaxation of it), which falls apart by offer,

        sum_b L_b + sum_o min_k (c_o k - sum_b t_bok),    c_o = `level_price`;

    a block without a cut adds its theta_b >= 0: nothing. procurement-3region's month 2
    with the peak fleet's day choice: $112,872.63 here, its plan $112,872.64, where the
    LP relaxation's bound is $94,100 (the relaxation's choice costs $109,918.57)."""
    cuts = list(cuts)
    bound = math.fsum(rhs for _, rhs, *_ in cuts)
    for offer in parts.offers:
        bound += min(
            level_price(lp, offer) * k
            - math.fsum(terms.get((offer.gpus, k), 0.0) for _, _, terms, *_ in cuts)
            for k in offer.levels
        )
    return bound


Levels = dict[str, int]
"""Committed GPU column -> level (servers, or GPUs where single)."""

TOLERANCE = 1e-6
"""Row slack below which a re-costed solution counts as feasible."""


@dataclass(frozen=True)
class Held:
    """A fleet that serves every period held all day (the static plan of the day's peak:
    models.operations.time_demand.held_all_day)."""

    committed: dict[str, float]
    """GPUs per committed GPU column."""
    layout: dict[str, float]
    """Its pools' integer columns by name (a period's copies' names less the period)."""
    month: int = 0
    """The month of the horizon whose day's peak it was planned for."""
    grown: dict[str, float] | None = None
    """Its pools grown to the demand of the program it starts, where that is a later
    month's (solver.time.held.grown_fleet: the month before's fleet), what the rounds' last plan
    holds (solver.decompose.by_period); None: `layout` as it is."""

    @property
    def late_layout(self) -> dict[str, float]:
        """The pools the rounds' last plan holds: `grown`, else `layout`."""
        return self.layout if self.grown is None else self.grown

    def levels(self, parts: Split) -> Levels:
        """The levels that commit its GPUs."""
        return {o.gpus: o.level_of(self.committed.get(o.gpus, 0.0)) for o in parts.offers}


Fleet = Callable[[], Held | None]
"""The held fleet, asked for once the rounds start; None where there is none."""


def cheaper(best, other):
    """The cheaper of two (cost, values) plans, either None where it is none."""
    if other is None:
        return best
    return other if best is None or other[0] < best[0] else best


class Known:
    """Each block's known solutions, and each re-costed at other levels of the commitment
    (solver.decompose.by_period): a block's solution stays feasible at another y once its
    on-demand columns are re-set to cover what y leaves, the rows that name them checked."""

    def __init__(self, lp: LinearProgram, parts: Split):
        self.lp, self.parts = lp, parts
        self.offer_of = {o.gpus: o for o in parts.offers}
        self.solutions: list[list[dict[str, float]]] = [[] for _ in parts.blocks]
        self.touched = [self._touched(block) for block in parts.blocks]
        self.priced: dict[tuple[int, int, tuple[int, ...]], tuple | None] = {}
        """(block, known solution, levels) -> its re-costing (`_recost`)."""
        self._cheapest: dict[tuple[int, tuple[int, ...]], tuple[int, tuple | None]] = {}
        """(block, levels) -> (the known solutions read, the cheapest of them there):
        solutions are only added, so `upper` reads only those added since."""

    def __getitem__(self, index: int) -> list[dict[str, float]]:
        """Block `index`'s known solutions."""
        return self.solutions[index]

    def add(self, index: int, values: dict[str, float]) -> None:
        """`values` on block `index`'s own columns, as one of its known solutions."""
        own = self.parts.blocks[index].columns
        self.solutions[index].append({name: values.get(name, 0.0) for name in own})

    def _touched(self, block: Block) -> tuple[str, ...]:
        """The block's rows over its commitment or on-demand columns: the only rows a
        re-costing can break (the solution held the others)."""
        names = {c.committed for c in block.covers} | {c.on_demand for c in block.covers}
        names |= {c.servers for c in block.covers if c.servers}
        return tuple(
            row for row in block.rows if not names.isdisjoint(self.lp.constraints[row].coefficients)
        )

    def upper(self, index: int, levels: Levels) -> tuple[float, dict[str, float]] | None:
        """The cheapest known solution of block `index` re-costed at `levels` (None:
        none holds there; the first of the cheapest, in the order they were added)."""
        key = tuple(levels[o.gpus] for o in self.parts.offers)
        read, best = self._cheapest.get((index, key), (0, None))
        solutions = self.solutions[index]
        for number in range(read, len(solutions)):
            if (index, number, key) not in self.priced:
                self.priced[(index, number, key)] = self._recost(index, solutions[number], levels)
            found = self.priced[(index, number, key)]
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        self._cheapest[(index, key)] = (len(solutions), best)
        return best

    def _recost(self, index: int, values: dict[str, float], levels: Levels):
        """A block's solution at other levels: each cover's on demand re-set to the least
        that covers (whole servers where rented so), every row and bound checked;
        (cost, values) or None."""
        block = self.parts.blocks[index]
        new = dict(values)
        full = new | held_values(levels, self.offer_of, block)
        for cover in block.covers:
            row = self.lp.constraints[cover.row]
            rest = sum(
                c * full.get(v, 0.0) for v, c in row.coefficients.items() if v != cover.on_demand
            )
            need = max(0.0, row.rhs - rest)
            if cover.servers is not None:
                n = self.offer_of[cover.committed].per_level
                count = math.ceil(need / n - 1e-9)
                new[cover.servers] = full[cover.servers] = float(count)
                need = float(n * count)
            new[cover.on_demand] = full[cover.on_demand] = need
        for cover in block.covers:
            for name in (cover.on_demand, cover.servers):
                upper = None if name is None else self.lp.variables[name].upper
                if upper is not None and full[name] > upper + TOLERANCE:
                    return None
        for name in self.touched[index]:
            row = self.lp.constraints[name]
            if row.slack(full) < -TOLERANCE * max(1.0, abs(row.rhs)):
                return None
        return sum(self.lp.objective.get(v, 0.0) * x for v, x in new.items()), new

    def plan(self, levels: Levels) -> tuple[float, dict[str, float]] | None:
        """The whole program's cost and values at `levels` from the blocks' cheapest
        known solutions (None where a block has none that holds there)."""
        values = held_values(levels, self.offer_of)
        for offer in self.parts.offers:
            if offer.servers is not None:
                values[offer.servers] = float(levels[offer.gpus])
        for i in range(len(self.parts.blocks)):
            known = self.upper(i, levels)
            if known is None:
                return None
            values.update(known[1])
        return self.lp.objective_value(values), values


def held_values(
    levels: Levels, offer_of: dict[str, Offer], block: Block | None = None
) -> dict[str, float]:
    """The committed GPU columns at `levels` (those `block` covers, or all)."""
    names = {c.committed for c in block.covers} if block is not None else set(levels)
    return {name: float(offer_of[name].per_level * levels[name]) for name in names}


class BlockPrograms:
    """A mixin of the period rounds' state (solver.decompose.by_period: its `lp`,
    `parts`, `offer_of` and `memo`): each block's program, fixed at levels (`_fixed`) or
    priced (`_free`)."""

    def _free(self, index: int, prices: dict[str, float]) -> LinearProgram:
        """Block `index` with its own copy of the commitment, priced `prices` per GPU."""
        block = self.parts.blocks[index]
        sub = self._fixed(index, None)
        for committed in {c.committed for c in block.covers}:
            offer = self.offer_of[committed]
            sub.variables[committed] = self.lp.variables[committed]
            sub.objective[committed] = prices.get(committed, 0.0)
            if offer.servers is not None and offer.link is not None:
                sub.variables[offer.servers] = self.lp.variables[offer.servers]
                sub.constraints[offer.link] = self.lp.constraints[offer.link]
        return sub

    def _fixed(
        self, index: int, levels: Levels | None, rent: bool = True, held: dict | None = None
    ) -> LinearProgram:
        """Block `index` with the commitment held at `levels` (and, `rent` off, nothing
        on demand; `held`: integer columns held at these values by their names less the
        period, where the block has them). Its columns, rows and objective are copied
        from the block's own, gathered once (`_block_base`): the rounds build a block's
        program once per pass and day's choice, 2,869 times in a procurement horizon."""
        variables, rows, objective, integers = self._block_base(index)
        sub = LinearProgram(f"{self.lp.name}-period{index}", rows_memo=self.memo)
        sub.variables = dict(variables)
        for name, base in integers if held else ():
            value = held.get(base)
            if value is not None:  # the column as `replace` makes it, without its cost
                level = round(value)
                sub.variables[name] = Variable(name, level, level, variables[name].integer)
        for cover in self.parts.blocks[index].covers if levels is not None else ():
            level = float(self.offer_of[cover.committed].per_level * levels[cover.committed])
            sub.variables[cover.committed] = Variable(cover.committed, level, level)
            for name in (cover.on_demand, cover.servers) if not rent else ():
                if name is not None:
                    sub.variables[name] = replace(sub.variables[name], lower=0.0, upper=0.0)
        sub.constraints = dict(rows)
        sub.objective = dict(objective)
        return sub

    def _block_base(self, index: int) -> tuple[dict, dict, dict, tuple[tuple[str, str], ...]]:
        """Block `index`'s columns and rows by name (in the block's order), its objective
        and its integer columns with their names less the period, gathered from the
        rounds' program once (it does not change while they run)."""
        bases = self.__dict__.setdefault("_block_bases", {})
        if index not in bases:
            block = self.parts.blocks[index]
            variables = {name: self.lp.variables[name] for name in block.columns}
            objective = {v: self.lp.objective[v] for v in block.columns if v in self.lp.objective}
            integers = tuple(
                (name, split_timed(name)[0]) for name, var in variables.items() if var.integer
            )
            rows = {name: self.lp.constraints[name] for name in block.rows}
            bases[index] = (variables, rows, objective, integers)
        return bases[index]
