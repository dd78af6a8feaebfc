"""The fleet program's rows as the cover reads them (solver.decompose.cover): rows by the
columns they mention, each pool's columns and their values at a replica count, and the
fewest replicas of a pool that carry its loads."""

import math
from collections import defaultdict
from functools import lru_cache

from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import ReplicasColumn, split_name

name_parts = lru_cache(maxsize=1 << 17)(split_name)  # cleared at the end of each cover
POOL_FAMILIES = frozenset(
    {"replicas", "pool_used", "pool_at_least", "pooled", "zone_survivors", "pooled_survivors"}
)
"""Columns of one pool (w, c, r: the first three fields of their index), valued together by
`pool_values` from its replica count."""
SET_FROM_COUNT = frozenset({"replicas", "pool_used", "pool_at_least"})
"""Of those, the columns the count sets (the rest take the most their rows allow)."""
UNCREDITED = frozenset({"pool_used", "pool_at_least"})
"""Pool columns that are no credit of capacity: the rest are each at most the replica count
(pooling steps, zone survivors: their `<=` rows), which `_bound` relies on."""


class Rows:
    """The rows of a program by the columns they mention, read once."""

    def __init__(self, lp: LinearProgram):
        self.lp = lp
        self.of: dict[str, list[Constraint]] = defaultdict(list)
        for row in lp.constraints.values():
            for name in row.coefficients:
                self.of[name].append(row)
        self.pool_columns: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for name in lp.variables:
            family, index = name_parts(name)
            if family in POOL_FAMILIES:
                self.pool_columns[index[:3]].append(name)
        for names in self.pool_columns.values():  # survivors, then each step up the ladder
            names.sort(key=lambda n: (len(name_parts(n)[1]), step_of(n)))

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


def step_of(name: str) -> int:
    """The pool size a pooling step's column names (0 for a pool's own columns)."""
    return int(name_parts(name)[1][3]) if len(name_parts(name)[1]) > 3 else 0


def pool_values(rows: Rows, pool: tuple[str, ...], count: int) -> dict[str, float]:
    """The values of a pool's columns at `count` replicas: the count, the pool in use, every rung
    of the ladder it reaches (up to the first its bounds hold at 0), and each credited column
    (pooling steps, zone survivors) at the most that its `<=` rows over the pool's columns alone
    and its bounds allow: the most credit `count` replicas can have."""
    values: dict[str, float] = {}
    names = rows.pool_columns[pool]
    reached = count > 0
    for name in names:  # the ladder's rungs in ascending order (`Rows`)
        family = name_parts(name)[0]
        if family == "replicas":
            values[name] = float(count)
        elif family == "pool_used":
            values[name] = 1.0 if count > 0 else 0.0
        elif family == "pool_at_least":
            upper = rows.lp.variables[name].upper
            reached = reached and step_of(name) <= count and (upper is None or upper >= 1)
            values[name] = 1.0 if reached else 0.0
    own = set(names)
    for name in names:
        if name_parts(name)[0] in SET_FROM_COUNT:
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


def read_rows(lp: LinearProgram) -> tuple:
    """Rows by column, capacity rows by pool group (w, r, phase), each replica's cost."""
    rows = Rows(lp)
    capacity: dict[tuple[str, ...], list[Constraint]] = defaultdict(list)
    for row in lp.constraints.values():
        if row.family == "capacity" and row.sense is Sense.GE:
            capacity[name_parts(row.name)[1][1:]].append(row)
    cost_of = {
        name: rows.gpu_cost(name) for name in lp.variables if name_parts(name)[0] == "replicas"
    }
    return rows, capacity, cost_of


@lru_cache(maxsize=1 << 17)
def pool_of(name: str) -> tuple[str, ...] | None:
    """The pool (w, c, r) a pool column belongs to, None for another column."""
    family, index = name_parts(name)
    return index[:3] if family in POOL_FAMILIES else None


def by_pool(group: list[Constraint]) -> dict[tuple[str, ...], list[list[tuple[str, float]]]]:
    """Each pool's terms in each row of `group` (a pool's capacity rows), read once."""
    split: dict[tuple[str, ...], list[list[tuple[str, float]]]] = {}
    for i, row in enumerate(group):
        for name, coef in row.coefficients.items():
            pool = pool_of(name)
            if pool is not None:
                split.setdefault(pool, [[] for _ in group])[i].append((name, coef))
    return split


def fewest(rows, pool, terms: list[list[tuple[str, float]]], need: list[float]) -> int | None:
    """The fewest replicas of `pool` whose credit (its `terms` in each capacity row) meets every
    row's `need`, at least the replicas column's lower bound; None when the pool is held closed or
    even its most (the column's upper bound) do not."""
    replicas, most = rows.lp.variables[ReplicasColumn(*pool).name()], most_replicas(rows, pool)
    if most < 1:
        return None  # the pool is held closed
    per_replica = [sum(c for _, c in row if c > 0) for row in terms]
    if any(p <= 0 for p, n in zip(per_replica, need, strict=True) if n > 1e-9):
        return None
    fewest = (math.ceil(n / p - 1e-9) for p, n in zip(per_replica, need, strict=True) if p > 0)
    count = max(*fewest, 1, math.ceil(replicas.lower - 1e-9))
    while count <= most:
        values = pool_values(rows, pool, count)
        if all(
            sum(c * values[n] for n, c in row) >= n_ - 1e-7 * max(1.0, abs(n_))
            for row, n_ in zip(terms, need, strict=True)
        ):
            return count
        count += 1
    return None


def most_replicas(rows: Rows, pool: tuple[str, ...]) -> int:
    """The most replicas a pool's bounds allow (0 where its pool_used is held at 0)."""
    variables = rows.lp.variables
    used = [variables[n].upper for n in rows.pool_columns[pool] if name_parts(n)[0] == "pool_used"]
    upper = variables[ReplicasColumn(*pool).name()].upper
    closed = any(u is not None and u < 1 for u in used)
    return 0 if closed else 10**6 if upper is None else int(upper + 1e-9)


def clear_caches() -> None:
    """Forget the names split and the pools read (kept for one cover)."""
    name_parts.cache_clear()
    pool_of.cache_clear()
