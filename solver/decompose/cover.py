"""A plan of the fleet program built without a solver: the cover that a solve keeps when
the clock stopped every program before a plan.

The fleet program covers loads: every demand row sends its users somewhere, and every
capacity row asks the pools of a (workload, region, phase) for at least the load routed
there, in every scenario. So a plan exists whenever the supply allows, and one is
found without a search (`covering_plan`):

    1. routing: users served in their own region where they may be; where they may not
       (their region lost), first into what the regions they may reach already carry
       for the workload in some other scenario, then the rest to the cheapest of them
    2. sizing: each pool (workload, region, phase) takes the configuration whose fewest
       replicas carry its load in every scenario (every pooling step and zone survivor
       credited as the pool's own rows allow) at the least cost on top of the pools
       chosen before, largest load first, then a few passes re-choosing each with the
       others held; the cost is either each GPU at its price or whole servers bought on
       top of the servers the others use (both are tried, the cheaper kept)
    3. any covering row still short (a Hall row of the failover scenarios by cuts) raises
       the chosen pools it names, the most credit per dollar first, one replica at a time
    4. purchases: what the replicas use beyond the existing fleet, in whole servers

and the values are checked against every row and bound of the program
(solver.program.lp.plan_of): a program with a family the cover does not value gets no
cover rather than a wrong one.

Its bound, region by region (`_bounds`): each pool's cheapest configuration's fewest replicas
for the loads without a routing choice (the scenario without failover), less the existing GPUs
at their price. Measured: 20 x 30 x 6 without failover, 18 s limit: a plan 1.054 x the optimum
(gap stated 8.8%). Small generated instances: 1.0-1.06 x without failover, 1.2-1.4 x with region
or zone loss. A pool its bounds close is never raised."""

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from solver.program.lp import Constraint, LinearProgram, Sense, plan_of
from solver.program.row_names import ReplicasColumn, split_name

_split = lru_cache(maxsize=1 << 17)(split_name)  # cleared at the end of each cover
POOL_FAMILIES = frozenset(
    {"replicas", "pool_used", "pool_at_least", "pooled", "zone_survivors", "pooled_survivors"}
)
"""Columns of one pool (w, c, r: the first three fields of their index), valued together by
`_pool_values` from its replica count."""
SET_FROM_COUNT = frozenset({"replicas", "pool_used", "pool_at_least"})
"""Of those, the columns the count sets (the rest take the most their rows allow)."""
UNCREDITED = frozenset({"pool_used", "pool_at_least"})
"""Pool columns that are no credit of capacity: the rest are each at most the replica count
(pooling steps, zone survivors: their `<=` rows), which `_bound` relies on."""


@dataclass(frozen=True)
class Cover:
    """A plan of a program built without a solver (`covering_plan`): its values, their cost, and a
    lower bound on the program's optimum (None where none is stated: a column with a negative
    cost)."""

    values: dict[str, float]
    cost: float
    bound: float | None


class _Rows:
    """The rows of a program by the columns they mention, read once."""

    def __init__(self, lp: LinearProgram):
        self.lp = lp
        self.of: dict[str, list[Constraint]] = defaultdict(list)
        for row in lp.constraints.values():
            for name in row.coefficients:
                self.of[name].append(row)
        self.pool_columns: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for name in lp.variables:
            family, index = _split(name)
            if family in POOL_FAMILIES:
                self.pool_columns[index[:3]].append(name)
        for names in self.pool_columns.values():  # survivors, then each step up the ladder
            names.sort(key=lambda n: (len(_split(n)[1]), _step(n)))

    def gpu_cost(self, replicas: str) -> float:
        """The cost of one more replica through the purchases its GPUs need: the sum over the
        purchase rows it is in of GPUs x the purchased column's cost, plus its own."""
        cost = self.lp.objective.get(replicas, 0.0)
        for row in self.of[replicas]:
            if row.family == "purchase":
                bought = [n for n, c in row.coefficients.items() if c > 0]
                price = sum(self.lp.objective.get(n, 0.0) for n in bought)
                cost += -row.coefficients[replicas] * price
        return cost


def _step(name: str) -> int:
    """The pool size a pooling step's column names (0 for a pool's own columns)."""
    return int(_split(name)[1][3]) if len(_split(name)[1]) > 3 else 0


def _pool_values(rows: _Rows, pool: tuple[str, ...], count: int) -> dict[str, float]:
    """The values of a pool's columns at `count` replicas: the count, the pool in use, every rung
    of the ladder it reaches (up to the first its bounds hold at 0), and each credited column
    (pooling steps, zone survivors) at the most that its `<=` rows over the pool's columns alone
    and its bounds allow: the most credit `count` replicas can have."""
    values: dict[str, float] = {}
    names = rows.pool_columns[pool]
    reached = count > 0
    for name in names:  # the ladder's rungs in ascending order (`_Rows`)
        family = _split(name)[0]
        if family == "replicas":
            values[name] = float(count)
        elif family == "pool_used":
            values[name] = 1.0 if count > 0 else 0.0
        elif family == "pool_at_least":
            upper = rows.lp.variables[name].upper
            reached = reached and _step(name) <= count and (upper is None or upper >= 1)
            values[name] = 1.0 if reached else 0.0
    own = set(names)
    for name in names:
        if _split(name)[0] in SET_FROM_COUNT:
            continue
        var = rows.lp.variables[name]
        most = math.inf if var.upper is None else var.upper
        for row in rows.of[name]:
            coef = row.coefficients[name]
            if row.sense is Sense.LE and coef > 0 and own.issuperset(row.coefficients):
                rest = sum(c * values.get(n, 0.0) for n, c in row.coefficients.items() if n != name)
                most = min(most, (row.rhs - rest) / coef)
        most = math.floor(most + 1e-9) if var.integer else most
        values[name] = max(var.lower, most) if math.isfinite(most) else var.lower
    return values


def _routed(rows: _Rows, unit: dict[tuple[str, str], float]) -> tuple[dict, dict[str, float]]:
    """Each demand row's load on its served columns, and the load of each served column that is its
    demand row's only column. Users are served in their own region where they may be; else (their
    region lost) their load first fills what the regions they may reach carry for the workload in
    another scenario, cheapest first (`unit`: the cheapest replica per request/s there), and the
    rest goes to the cheapest of them."""
    values: dict[str, float] = {}
    forced: dict[str, float] = {}
    load: dict[tuple[str, str, str], float] = defaultdict(float)  # (scenario, w, region)
    away = []
    for row in rows.lp.constraints.values():
        if row.family != "demand" or row.sense is not Sense.EQ or not row.coefficients:
            continue
        if any(_split(n)[0] != "served" or c <= 0 for n, c in row.coefficients.items()):
            continue  # not a plain choice of where to serve: the cover leaves it broken
        if len(row.coefficients) == 1:
            forced.update((n, row.rhs / c) for n, c in row.coefficients.items())
        home = [n for n in row.coefficients if _split(n)[1][2] == _split(n)[1][3]]
        if not home:
            away.append(row)
            continue
        values[home[0]] = row.rhs / row.coefficients[home[0]]
        scenario, workload, _, region = _split(home[0])[1]
        load[(scenario, workload, region)] += row.rhs
    carried: dict[tuple[str, str], float] = defaultdict(float)
    for (_, workload, region), served in load.items():
        carried[(workload, region)] = max(carried[(workload, region)], served)
    for row in sorted(away, key=lambda r: (-r.rhs, r.name)):
        names = sorted(
            row.coefficients,
            key=lambda n: (unit.get(tuple(_split(n)[1][1:4:2]), math.inf), n),
        )
        left = row.rhs
        for name in names:
            scenario, workload, _, region = _split(name)[1]
            room = carried[(workload, region)] - load[(scenario, workload, region)]
            taken = min(max(room, 0.0), left)
            if taken > 0:
                values[name] = values.get(name, 0.0) + taken / row.coefficients[name]
                load[(scenario, workload, region)] += taken
                left -= taken
        if left > 0:
            name = names[0]
            scenario, workload, _, region = _split(name)[1]
            values[name] = values.get(name, 0.0) + left / row.coefficients[name]
            load[(scenario, workload, region)] += left
            carried[(workload, region)] = max(
                carried[(workload, region)], load[(scenario, workload, region)]
            )
    return values, forced


def covering_plan(lp: LinearProgram) -> Cover | None:
    """A plan of the fleet program `lp` built without a solver, and its bound (the module
    docstring); None when some pool's load fits no configuration within the supply or the values
    are not a plan of `lp` (a family the cover does not value, say)."""
    rows, capacity, cost_of = _read(lp)
    unit: dict[tuple[str, str], float] = defaultdict(lambda: math.inf)
    for (workload, region, *_), group in capacity.items():
        for row in group:
            for name, coef in row.coefficients.items():
                if name in cost_of and coef > 0:
                    unit[workload, region] = min(unit[workload, region], cost_of[name] / coef)
    routed, forced = _routed(rows, unit)
    options = _options(rows, capacity, cost_of, routed)
    plans, fleet, raising = [], _Fleet(rows), _Raising(rows, capacity)
    for rounded_first in (False, True) if options is not None else ():
        chosen = _chosen(fleet, options, cost_of, rounded_first)
        if chosen is None:
            continue
        if PACKED and not rounded_first:
            chosen = _packed(fleet, options, cost_of, chosen)
        values = dict(routed)
        for _, pool, count in chosen.values():
            values.update(_pool_values(rows, pool, count))
        if not raising.raised(fleet, chosen, values):
            continue
        _purchased(rows, values)
        values |= {name: var.lower for name, var in lp.variables.items() if name not in values}
        plans.append((lp.objective_value(values), rounded_first, values))
    cover = None
    for cost, _, values in sorted(plans, key=lambda plan: plan[:2]):
        if plan_of(lp, values):
            by_region = _bounds(rows, capacity, cost_of, forced)
            bound = None if by_region is None else lp.objective_constant + sum(by_region.values())
            cover = Cover(values, cost, bound)
            break
    _split.cache_clear()
    _pool_of.cache_clear()
    return cover


def bounds_by_region(lp: LinearProgram) -> dict[str, float] | None:
    """The cover's bound region by region (`_bounds`), without the cover."""
    rows, capacity, cost_of = _read(lp)
    bounds = _bounds(rows, capacity, cost_of, _routed(rows, {})[1])
    _split.cache_clear()
    _pool_of.cache_clear()
    return bounds


def _read(lp: LinearProgram) -> tuple:
    """Rows by column, capacity rows by pool group (w, r, phase), each replica's cost."""
    rows = _Rows(lp)
    capacity: dict[tuple[str, ...], list[Constraint]] = defaultdict(list)
    for row in lp.constraints.values():
        if row.family == "capacity" and row.sense is Sense.GE:
            capacity[_split(row.name)[1][1:]].append(row)
    cost_of = {name: rows.gpu_cost(name) for name in lp.variables if _split(name)[0] == "replicas"}
    return rows, capacity, cost_of


@lru_cache(maxsize=1 << 17)
def _pool_of(name: str) -> tuple[str, ...] | None:
    """The pool (w, c, r) a pool column belongs to, None for another column."""
    family, index = _split(name)
    return index[:3] if family in POOL_FAMILIES else None


IMPROVING_PASSES = 3
"""Passes re-choosing each pool's configuration with the others held, after the first."""
PACKED = True
"""Whether the sizing is re-chosen region by region from starts on one or two GPU types
(`_packed`); off, the bench's `before` (tests/bench/test_short_limits_bench.py)."""


class _Fleet:
    """What the chosen pools use: each `<=` row over replica columns alone (a region's supply of a
    GPU type) and each purchase row's GPUs, and what one more pool costs there: its GPUs bought on
    top of what is used, in whole servers where a whole_servers row asks for them (the existing
    fleet first)."""

    def __init__(self, rows: _Rows):
        lp = rows.lp
        self.rows = rows
        self.caps: dict[str, list[tuple[Constraint, float]]] = defaultdict(list)
        self.buys: dict[str, list[tuple[Constraint, float]]] = defaultdict(list)
        self.used: dict[str, float] = defaultdict(float)
        self.node: dict[str, float] = {}
        self.price: dict[str, float] = {}
        for row in lp.constraints.values():
            terms = row.coefficients.items()
            replicas_only = all(_split(n)[0] == "replicas" and c >= 0 for n, c in terms)
            if row.sense is Sense.LE and terms and replicas_only:
                for name, coef in terms:
                    self.caps[name].append((row, coef))
            if row.family == "purchase" and row.sense is Sense.GE:
                bought = [n for n, c in terms if _split(n)[0] == "purchased" and c > 0]
                if len(bought) != 1:
                    continue
                self.price[row.name] = (
                    lp.objective.get(bought[0], 0.0) / row.coefficients[bought[0]]
                )
                for name, coef in terms:
                    if _split(name)[0] == "replicas" and coef < 0:
                        self.buys[name].append((row, -coef))
                for server_row in rows.of[bought[0]]:
                    if server_row.family == "whole_servers" and len(server_row.coefficients) == 2:
                        per = server_row.coefficients[bought[0]]
                        node = -sum(c for n, c in server_row.coefficients.items() if n != bought[0])
                        if per > 0 and node > 0:
                            self.node[row.name] = node / per

    def _bought(self, row: Constraint, used: float) -> float:
        """The cost of what the row buys at `used` GPUs (whole servers where asked)."""
        least = max(used + row.rhs, 0.0)
        node = self.node.get(row.name)
        if node is not None:
            least = node * math.ceil(least / node - 1e-9)
        return self.price[row.name] * least

    def extra(self, replicas: str, count: int, rounded: bool = True) -> float | None:
        """What `count` more replicas cost (None when some supply row refuses them): their GPUs
        bought on top of those used (`rounded`), else at their price each."""
        if any(
            self.used[row.name] + coef * count > row.rhs + 1e-6 for row, coef in self.caps[replicas]
        ):
            return None
        cost = self.rows.lp.objective.get(replicas, 0.0) * count
        for row, gpus in self.buys[replicas]:
            if not rounded:
                cost += self.price[row.name] * gpus * count
                continue
            now = self.used[row.name]
            cost += self._bought(row, now + gpus * count) - self._bought(row, now)
        return cost

    def add(self, replicas: str, count: int) -> None:
        """Use (negative: give back) `count` replicas' rows."""
        for row, coef in (*self.caps[replicas], *self.buys[replicas]):
            self.used[row.name] += coef * count


Option = tuple[str, tuple[str, ...], int]
"""A pool's configuration that carries its load: (replicas column, pool, replica count)."""


def _options(rows, capacity, cost_of, routed: dict[str, float]) -> dict | None:
    """Each pool's configurations that carry its load in every scenario (the routing `routed`), at
    their fewest replicas (`_count`); None when some pool has none."""
    options: dict[tuple[str, ...], list[Option]] = {}
    for key, group in capacity.items():
        need = [
            row.rhs
            - sum(
                c * routed.get(n, 0.0) for n, c in row.coefficients.items() if _pool_of(n) is None
            )
            for row in group
        ]
        if max(need) <= 1e-9:
            continue
        split = _by_pool(group)
        found = []
        for pool in sorted(split):
            replicas = ReplicasColumn(*pool).name()
            count = _count(rows, pool, split[pool], need) if replicas in cost_of else None
            if count is not None:
                found.append((replicas, pool, count))
        if not found:
            return None
        options[key] = found
    return options


def _chosen(fleet: "_Fleet", options, cost_of, rounded_first: bool, start=None) -> dict | None:
    """One option per pool: largest load first, the cheapest on top of the pools chosen before
    (`_Fleet.extra`: whole servers where `rounded_first`, else each GPU at its price), or `start`'s,
    then `IMPROVING_PASSES` passes re-choosing each in whole servers with the others held; None when
    the supply rows refuse some pool every option. Starts `fleet` empty, leaves it at the choice."""
    fleet.used.clear()
    order = sorted(options, key=lambda k: (-min(cost_of[r] * n for r, _, n in options[k]), k))
    chosen: dict[tuple[str, ...], Option] = dict(start or {})
    for replicas, _, count in chosen.values():
        fleet.add(replicas, count)
    for step in range(1 + IMPROVING_PASSES):
        changed = False
        for key in order:
            held = chosen.get(key)
            if held is not None:
                fleet.add(held[0], -held[2])
            priced = [
                (fleet.extra(r, n, rounded_first or step > 0), r, p, n) for r, p, n in options[key]
            ]
            fitting = [(cost, p, r, n) for cost, r, p, n in priced if cost is not None]
            if not fitting:
                return None
            _, pool, replicas, count = min(fitting)
            chosen[key] = (replicas, pool, count)
            fleet.add(replicas, count)
            changed = changed or held != chosen[key]
        if step and not changed:
            break
    return chosen


def _packed(fleet: "_Fleet", options, cost_of, chosen: dict) -> dict:
    """`chosen` with each region's pools re-chosen where that buys its servers for less: `_chosen`
    from every pool on its cheapest option of one GPU type (its cheapest of any where it has none
    of that type); each region keeps the cheapest choice (regions share no purchase or supply row,
    so the choices join), `fleet` left at it. On 10 x 20 x 6 region loss at the defaults, seeds
    0/1/2, the cover's $747,754 / $787,407 / $850,538 became $728,073 / $744,658 / $816,374 (six
    starts, 0.1-0.5 s of CPU more than the greedy alone). Starts on pairs of types too (21 in
    all) packed seed 0's sizing to $700,858 but left the failover rows less room: $733,212 /
    $749,214 / $834,361 after the raising, at twice the CPU."""

    def gpu(option: Option) -> str:
        buys = fleet.buys[option[0]]
        return _split(buys[0][0].name)[1][1] if buys else ""

    def by_region(choice: dict) -> dict[str, float]:
        fleet.used.clear()
        for replicas, _, count in choice.values():
            fleet.add(replicas, count)
        costs: dict[str, float] = defaultdict(float)
        for name, used in fleet.used.items():
            if name in fleet.price:
                costs[_split(name)[1][0]] += fleet._bought(fleet.rows.lp.constraints[name], used)
        return costs

    best, least = dict(chosen), by_region(chosen)
    types = sorted({gpu(option) for group in options.values() for option in group} - {""})
    for kept in types:
        start = {
            key: min(
                (o for o in group if gpu(o) == kept),
                default=None,
                key=lambda o: cost_of[o[0]] * o[2],
            )
            or min(group, key=lambda o: cost_of[o[0]] * o[2])
            for key, group in options.items()
        }
        tried = _chosen(fleet, options, cost_of, True, start)
        costs = by_region(tried) if tried is not None else {}
        better = {r for r, cost in costs.items() if cost < least.get(r, math.inf) - 1e-6}
        best |= {key: tried[key] for key in options if key[1] in better}
        least |= {r: costs[r] for r in better}
    by_region(best)
    return best


class _Raising:
    """The covering rows other than the capacity rows (`>=` rows over pools' credit alone: the Hall
    rows of failover by cuts), and the pool group each pool belongs to (its configs_per_pool row,
    else its capacity rows, else itself)."""

    def __init__(self, rows: _Rows, capacity: dict[tuple[str, ...], list[Constraint]]):
        self.rows = rows
        self.covering = sorted(
            (
                row
                for row in rows.lp.constraints.values()
                if row.sense is Sense.GE
                and row.rhs > 0
                and row.family != "capacity"
                and all(c > 0 and _pool_of(n) is not None for n, c in row.coefficients.items())
            ),
            key=lambda row: (-row.rhs, row.name),
        )
        self.group_of: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key, group in capacity.items():
            for row in group:
                for name in row.coefficients:
                    if (pool := _pool_of(name)) is not None:
                        self.group_of.setdefault(pool, key)
        for row in rows.lp.constraints.values():
            if row.family == "configs_per_pool":
                for name in row.coefficients:
                    if (pool := _pool_of(name)) is not None:
                        self.group_of[pool] = ("configs",) + _split(row.name)[1]

    def raised(self, fleet: "_Fleet", chosen: dict, values: dict[str, float]) -> bool:
        """Raise the pools each short covering row names (`values` and `fleet` updated): one
        replica at a time of the pool whose next replica adds the most of the row's credit per
        dollar (`_Fleet.extra`), a pool whose group chose another configuration left out; False
        when some row cannot be met (the supply refuses)."""
        counts = {pool: count for _, pool, count in chosen.values()}
        taken = {self.group_of.get(pool, pool): pool for pool in counts}
        for _ in range(2):  # a row met early may rise further with later ones: check again
            short_any = False
            for row in self.covering:
                terms: dict[tuple[str, ...], list[tuple[str, float]]] = defaultdict(list)
                while row.rhs - row.activity(values) > 1e-7 * max(1.0, row.rhs):
                    if not terms:  # a short row's pools, read once (most rows are met)
                        for name, coef in row.coefficients.items():
                            terms[_pool_of(name)].append((name, coef))
                    short_any = True
                    best = None
                    for pool, own in sorted(terms.items()):
                        group = taken.get(self.group_of.get(pool, pool), pool)
                        if group != pool or counts.get(pool, 0) >= _most(self.rows, pool):
                            continue  # another configuration's phase, or held (closed)
                        more = _pool_values(self.rows, pool, counts.get(pool, 0) + 1)
                        gain = sum(c * (more[n] - values.get(n, 0.0)) for n, c in own)
                        cost = fleet.extra(ReplicasColumn(*pool).name(), 1)
                        if gain > 0 and cost is not None:
                            rank = gain / max(cost, 1e-9)
                            if best is None or rank > best[0]:
                                best = (rank, pool, more)
                    if best is None:
                        return False
                    _, pool, more = best
                    values.update(more)
                    counts[pool] = counts.get(pool, 0) + 1
                    taken[self.group_of.get(pool, pool)] = pool
                    fleet.add(ReplicasColumn(*pool).name(), 1)
            if not short_any:
                return True
        return True


def _by_pool(group: list[Constraint]) -> dict[tuple[str, ...], list[list[tuple[str, float]]]]:
    """Each pool's terms in each row of `group` (a pool's capacity rows), read once."""
    split: dict[tuple[str, ...], list[list[tuple[str, float]]]] = {}
    for i, row in enumerate(group):
        for name, coef in row.coefficients.items():
            pool = _pool_of(name)
            if pool is not None:
                split.setdefault(pool, [[] for _ in group])[i].append((name, coef))
    return split


def _count(rows, pool, terms: list[list[tuple[str, float]]], need: list[float]) -> int | None:
    """The fewest replicas of `pool` whose credit (its `terms` in each capacity row) meets every
    row's `need`, at least the replicas column's lower bound; None when the pool is held closed or
    even its most (the column's upper bound) do not."""
    replicas, most = rows.lp.variables[ReplicasColumn(*pool).name()], _most(rows, pool)
    if most < 1:
        return None  # the pool is held closed
    per_replica = [sum(c for _, c in row if c > 0) for row in terms]
    if any(p <= 0 for p, n in zip(per_replica, need, strict=True) if n > 1e-9):
        return None
    fewest = (math.ceil(n / p - 1e-9) for p, n in zip(per_replica, need, strict=True) if p > 0)
    count = max(*fewest, 1, math.ceil(replicas.lower - 1e-9))
    while count <= most:
        values = _pool_values(rows, pool, count)
        if all(
            sum(c * values[n] for n, c in row) >= n_ - 1e-7 * max(1.0, abs(n_))
            for row, n_ in zip(terms, need, strict=True)
        ):
            return count
        count += 1
    return None


def _most(rows: _Rows, pool: tuple[str, ...]) -> int:
    """The most replicas a pool's bounds allow (0 where its pool_used is held at 0)."""
    variables = rows.lp.variables
    used = [variables[n].upper for n in rows.pool_columns[pool] if _split(n)[0] == "pool_used"]
    upper = variables[ReplicasColumn(*pool).name()].upper
    closed = any(u is not None and u < 1 for u in used)
    return 0 if closed else 10**6 if upper is None else int(upper + 1e-9)


def _purchased(rows: _Rows, values: dict[str, float]) -> None:
    """Each purchased column at the least its purchase rows need, rounded up to whole servers where
    a whole_servers row ties it to a server count."""
    for row in rows.lp.constraints.values():
        if row.family != "purchase" or row.sense is not Sense.GE:
            continue
        bought = [n for n, c in row.coefficients.items() if _split(n)[0] == "purchased"]
        if len(bought) != 1:
            continue
        (name,) = bought
        rest = sum(c * values.get(n, 0.0) for n, c in row.coefficients.items() if n != name)
        least = max((row.rhs - rest) / row.coefficients[name], 0.0)
        values[name] = max(values.get(name, 0.0), round(least, 9))
    for row in rows.lp.constraints.values():
        if row.family != "whole_servers" or row.sense is not Sense.EQ or len(row.coefficients) != 2:
            continue
        (bought, per), (servers, node) = sorted(
            row.coefficients.items(), key=lambda item: _split(item[0])[0] != "purchased"
        )
        if node >= 0 or per <= 0:
            continue
        count = math.ceil(values.get(bought, 0.0) * per / -node - 1e-9)
        values[servers] = float(count)
        values[bought] = count * -node / per


def _bounds(rows, capacity, cost_of, forced: dict[str, float]) -> dict[str, float] | None:
    """The cover's lower bound on each region's cost (the objective's constant aside): the GPUs of
    each of its pools at the least its rows without a choice of routing ask (`_pool_bound`),
    summed, less its existing GPUs at their price (what its purchase rows let go unbought), at
    least 0. None with a negative cost or lower bound on some column (then the columns left out
    could lower the cost), or a pool in two phases' rows."""
    lp = rows.lp
    if any(c < 0 for c in lp.objective.values()) or any(v.lower < 0 for v in lp.variables.values()):
        return None
    one_config = _one_config_pools(rows)
    total: dict[str, float] = defaultdict(float)
    owner: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, group in capacity.items():
        if any(_split(n)[0] in UNCREDITED for row in group for n in row.coefficients):
            continue  # a credit not below the replica count: not bounded this way
        pools = {p for row in group for n in row.coefficients if (p := _pool_of(n))}
        for pool in pools:
            if owner.setdefault(pool, key) != key:
                return None  # a pool in two phases' rows: the sum would count it twice
        least = _pool_bound(rows, group, cost_of, forced, sorted(pools), key in one_config)
        total[key[1]] += least
    for row in lp.constraints.values():
        if row.family == "purchase" and row.sense is Sense.GE:
            price = sum(lp.objective.get(n, 0.0) for n, c in row.coefficients.items() if c > 0)
            total[_split(row.name)[1][0]] += price * min(row.rhs, 0.0)
    return {region: max(cost, 0.0) for region, cost in total.items()}


def _pool_bound(rows, group, cost_of, forced, pools, one_config: bool) -> float:
    """The least GPU cost of a pool (workload, region, phase) whose capacity rows' loads are forced
    (every other column a served column its demand row fixes: the scenario without failover): with
    one configuration per pool, the cheapest configuration's fewest replicas that carry those loads
    (`_count`, every credit its rows allow); else, or where higher, each load at the cheapest
    credit per replica any configuration could reach (its lone replica's and every pooling step's,
    each column of a pool's credit being at most its replica count)."""
    kept, need = [], []
    for row in group:
        other = {n: c for n, c in row.coefficients.items() if _pool_of(n) is None}
        if set(other) <= forced.keys():
            kept.append(row)
            need.append(row.rhs - sum(c * forced[n] for n, c in other.items()))
    if not kept or max(need) <= 0:
        return 0.0
    least = 0.0
    for row, load in zip(kept, need, strict=True):
        credit: dict[str, float] = defaultdict(float)
        for name, coef in row.coefficients.items():
            pool = _pool_of(name)
            if pool is not None and coef > 0:
                credit[ReplicasColumn(*pool).name()] += coef
        price = min((cost_of[r] / c for r, c in credit.items() if r in cost_of), default=None)
        if load > 0 and price is not None:
            least = max(least, load * price)
    if one_config:
        split = _by_pool(kept)
        counts = [
            cost_of[name] * count
            for pool in pools
            if (name := ReplicasColumn(*pool).name()) in cost_of
            and (count := _count(rows, pool, split.get(pool, [[] for _ in kept]), need)) is not None
        ]
        least = max(least, min(counts, default=least))
    return least


def _one_config_pools(rows: _Rows) -> set[tuple[str, ...]]:
    """The pools (workload, region, phase) held to one configuration: a configs_per_pool row at
    most 1 over their pool_used binaries, each configuration's replicas 0 unless its binary is 1
    (its pool_open row)."""
    opened = {
        _split(row.name)[1][:3]
        for row in rows.lp.constraints.values()
        if row.family == "pool_open" and row.sense is Sense.LE and row.rhs <= 0
    }
    held = set()
    for row in rows.lp.constraints.values():
        if row.family != "configs_per_pool" or row.sense is not Sense.LE or row.rhs >= 2:
            continue
        if all(c >= 1 and _split(n)[1][:3] in opened for n, c in row.coefficients.items()):
            held.add(_split(row.name)[1])
    return held
