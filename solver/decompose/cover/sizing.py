"""The cover's sizing (solver.decompose.cover): each pool's configurations that carry its
load, one chosen per pool on top of those chosen before (whole servers or each GPU at its
price), region by region re-packed from single GPU types, the covering rows' shortfalls
raised, and the purchases in whole servers."""

import math
from collections import defaultdict

from solver.decompose.cover.rows import (
    Rows,
    by_pool,
    fewest,
    most_replicas,
    name_parts,
    pool_of,
    pool_values,
)
from solver.program.lp import Constraint, Sense
from solver.program.row_names import ReplicasColumn

IMPROVING_PASSES = 3
"""Passes re-choosing each pool's configuration with the others held, after the first."""
PACKED = True
"""Whether the sizing is re-chosen region by region from starts on one or two GPU types
(`packed`); off, the bench's `before` (tests/bench/test_short_limits_bench.py)."""


class Fleet:
    """What the chosen pools use: each `<=` row over replica columns alone (a region's supply of a
    GPU type) and each purchase row's GPUs, and what one more pool costs there: its GPUs bought on
    top of what is used, in whole servers where a whole_servers row asks for them (the existing
    fleet first)."""

    def __init__(self, rows: Rows):
        lp = rows.lp
        self.rows = rows
        self.caps: dict[str, list[tuple[Constraint, float]]] = defaultdict(list)
        self.buys: dict[str, list[tuple[Constraint, float]]] = defaultdict(list)
        self.used: dict[str, float] = defaultdict(float)
        self.node: dict[str, float] = {}
        self.price: dict[str, float] = {}
        for row in lp.constraints.values():
            terms = row.coefficients.items()
            replicas_only = all(name_parts(n)[0] == "replicas" and c >= 0 for n, c in terms)
            if row.sense is Sense.LE and terms and replicas_only:
                for name, coef in terms:
                    self.caps[name].append((row, coef))
            if row.family == "purchase" and row.sense is Sense.GE:
                bought = [n for n, c in terms if name_parts(n)[0] == "purchased" and c > 0]
                if len(bought) != 1:
                    continue
                self.price[row.name] = (
                    lp.objective.get(bought[0], 0.0) / row.coefficients[bought[0]]
                )
                for name, coef in terms:
                    if name_parts(name)[0] == "replicas" and coef < 0:
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


def pool_options(rows, capacity, cost_of, routed: dict[str, float]) -> dict | None:
    """Each pool's configurations that carry its load in every scenario (the routing `routed`), at
    their fewest replicas (`fewest`); None when some pool has none."""
    options: dict[tuple[str, ...], list[Option]] = {}
    for key, group in capacity.items():
        need = [
            row.rhs
            - sum(c * routed.get(n, 0.0) for n, c in row.coefficients.items() if pool_of(n) is None)
            for row in group
        ]
        if max(need) <= 1e-9:
            continue
        split = by_pool(group)
        found = []
        for pool in sorted(split):
            replicas = ReplicasColumn(*pool).name()
            count = fewest(rows, pool, split[pool], need) if replicas in cost_of else None
            if count is not None:
                found.append((replicas, pool, count))
        if not found:
            return None
        options[key] = found
    return options


def choose(fleet: "Fleet", options, cost_of, rounded_first: bool, start=None) -> dict | None:
    """One option per pool: largest load first, the cheapest on top of the pools chosen before
    (`Fleet.extra`: whole servers where `rounded_first`, else each GPU at its price), or `start`'s,
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


def packed(fleet: "Fleet", options, cost_of, chosen: dict) -> dict:
    """`chosen` with each region's pools re-chosen where that buys its servers for less: `choose`
    from every pool on its cheapest option of one GPU type (its cheapest of any where it has none
    of that type); each region keeps the cheapest choice (regions share no purchase or supply row,
    so the choices join), `fleet` left at it. On 10 x 20 x 6 region loss at the defaults, seeds
    0/1/2, the cover's $747,754 / $787,407 / $850,538 became $728,073 / $744,658 / $816,374 (six
    starts, 0.1-0.5 s of CPU more than the greedy alone). Starts on pairs of types too (21 in
    all) packed seed 0's sizing to $700,858 but left the failover rows less room: $733,212 /
    $749,214 / $834,361 after the raising, at twice the CPU."""

    def gpu(option: Option) -> str:
        buys = fleet.buys[option[0]]
        return name_parts(buys[0][0].name)[1][1] if buys else ""

    def by_region(choice: dict) -> dict[str, float]:
        fleet.used.clear()
        for replicas, _, count in choice.values():
            fleet.add(replicas, count)
        costs: dict[str, float] = defaultdict(float)
        for name, used in fleet.used.items():
            if name in fleet.price:
                costs[name_parts(name)[1][0]] += fleet._bought(
                    fleet.rows.lp.constraints[name], used
                )
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
        tried = choose(fleet, options, cost_of, True, start)
        costs = by_region(tried) if tried is not None else {}
        better = {r for r, cost in costs.items() if cost < least.get(r, math.inf) - 1e-6}
        best |= {key: tried[key] for key in options if key[1] in better}
        least |= {r: costs[r] for r in better}
    by_region(best)
    return best


class Raising:
    """The covering rows other than the capacity rows (`>=` rows over pools' credit alone: the Hall
    rows of failover by cuts), and the pool group each pool belongs to (its configs_per_pool row,
    else its capacity rows, else itself)."""

    def __init__(self, rows: Rows, capacity: dict[tuple[str, ...], list[Constraint]]):
        self.rows = rows
        self.covering = sorted(
            (
                row
                for row in rows.lp.constraints.values()
                if row.sense is Sense.GE
                and row.rhs > 0
                and row.family != "capacity"
                and all(c > 0 and pool_of(n) is not None for n, c in row.coefficients.items())
            ),
            key=lambda row: (-row.rhs, row.name),
        )
        self.group_of: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key, group in capacity.items():
            for row in group:
                for name in row.coefficients:
                    if (pool := pool_of(name)) is not None:
                        self.group_of.setdefault(pool, key)
        for row in rows.lp.constraints.values():
            if row.family == "configs_per_pool":
                for name in row.coefficients:
                    if (pool := pool_of(name)) is not None:
                        self.group_of[pool] = ("configs",) + name_parts(row.name)[1]

    def raised(self, fleet: "Fleet", chosen: dict, values: dict[str, float]) -> bool:
        """Raise the pools each short covering row names (`values` and `fleet` updated): one
        replica at a time of the pool whose next replica adds the most of the row's credit per
        dollar (`Fleet.extra`), a pool whose group chose another configuration left out; False
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
                            terms[pool_of(name)].append((name, coef))
                    short_any = True
                    best = None
                    for pool, own in sorted(terms.items()):
                        group = taken.get(self.group_of.get(pool, pool), pool)
                        if group != pool or counts.get(pool, 0) >= most_replicas(self.rows, pool):
                            continue  # another configuration's phase, or held (closed)
                        more = pool_values(self.rows, pool, counts.get(pool, 0) + 1)
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


def buy_servers(rows: Rows, values: dict[str, float]) -> None:
    """Each purchased column at the least its purchase rows need, rounded up to whole servers where
    a whole_servers row ties it to a server count."""
    for row in rows.lp.constraints.values():
        if row.family != "purchase" or row.sense is not Sense.GE:
            continue
        bought = [n for n, c in row.coefficients.items() if name_parts(n)[0] == "purchased"]
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
            row.coefficients.items(), key=lambda item: name_parts(item[0])[0] != "purchased"
        )
        if node >= 0 or per <= 0:
            continue
        count = math.ceil(values.get(bought, 0.0) * per / -node - 1e-9)
        values[servers] = float(count)
        values[bought] = count * -node / per
