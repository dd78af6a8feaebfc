"""The cover's lower bound, region by region (solver.decompose.cover): each pool's least
GPU cost for the loads without a routing choice, less the existing GPUs at their price."""

from collections import defaultdict

from solver.decompose.cover.rows import (
    UNCREDITED,
    Rows,
    by_pool,
    fewest,
    name_parts,
    pool_of,
)
from solver.program.lp import Sense
from solver.program.row_names import ReplicasColumn


def region_bounds(rows, capacity, cost_of, forced: dict[str, float]) -> dict[str, float] | None:
    """The cover's lower bound on each region's cost (the objective's constant aside): the GPUs of
    each of its pools at the least its rows without a choice of routing ask (`pool_bound`),
    summed, less its existing GPUs at their price (what its purchase rows let go unbought), at
    least 0. None with a negative cost or lower bound on some column (then the columns left out
    could lower the cost), or a pool in two phases' rows."""
    lp = rows.lp
    if any(c < 0 for c in lp.objective.values()) or any(v.lower < 0 for v in lp.variables.values()):
        return None
    one_config = one_config_pools(rows)
    total: dict[str, float] = defaultdict(float)
    owner: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, group in capacity.items():
        if any(name_parts(n)[0] in UNCREDITED for row in group for n in row.coefficients):
            continue  # a credit not below the replica count: not bounded this way
        pools = {p for row in group for n in row.coefficients if (p := pool_of(n))}
        for pool in pools:
            if owner.setdefault(pool, key) != key:
                return None  # a pool in two phases' rows: the sum would count it twice
        least = pool_bound(rows, group, cost_of, forced, sorted(pools), key in one_config)
        total[key[1]] += least
    for row in lp.constraints.values():
        if row.family == "purchase" and row.sense is Sense.GE:
            price = sum(lp.objective.get(n, 0.0) for n, c in row.coefficients.items() if c > 0)
            total[name_parts(row.name)[1][0]] += price * min(row.rhs, 0.0)
    return {region: max(cost, 0.0) for region, cost in total.items()}


def pool_bound(rows, group, cost_of, forced, pools, one_config: bool) -> float:
    """The least GPU cost of a pool (workload, region, phase) whose capacity rows' loads are forced
    (every other column a served column its demand row fixes: the scenario without failover): with
    one configuration per pool, the cheapest configuration's fewest replicas that carry those loads
    (`fewest`, every credit its rows allow); else, or where higher, each load at the cheapest
    credit per replica any configuration could reach (its lone replica's and every pooling step's,
    each column of a pool's credit being at most its replica count)."""
    kept, need = [], []
    for row in group:
        other = {n: c for n, c in row.coefficients.items() if pool_of(n) is None}
        if set(other) <= forced.keys():
            kept.append(row)
            need.append(row.rhs - sum(c * forced[n] for n, c in other.items()))
    if not kept or max(need) <= 0:
        return 0.0
    least = 0.0
    for row, load in zip(kept, need, strict=True):
        credit: dict[str, float] = defaultdict(float)
        for name, coef in row.coefficients.items():
            pool = pool_of(name)
            if pool is not None and coef > 0:
                credit[ReplicasColumn(*pool).name()] += coef
        price = min((cost_of[r] / c for r, c in credit.items() if r in cost_of), default=None)
        if load > 0 and price is not None:
            least = max(least, load * price)
    if one_config:
        split = by_pool(kept)
        counts = [
            cost_of[name] * count
            for pool in pools
            if (name := ReplicasColumn(*pool).name()) in cost_of
            and (count := fewest(rows, pool, split.get(pool, [[] for _ in kept]), need)) is not None
        ]
        least = max(least, min(counts, default=least))
    return least


def one_config_pools(rows: Rows) -> set[tuple[str, ...]]:
    """The pools (workload, region, phase) held to one configuration: a configs_per_pool row at
    most 1 over their pool_used binaries, each configuration's replicas 0 unless its binary is 1
    (its pool_open row)."""
    opened = {
        name_parts(row.name)[1][:3]
        for row in rows.lp.constraints.values()
        if row.family == "pool_open" and row.sense is Sense.LE and row.rhs <= 0
    }
    held = set()
    for row in rows.lp.constraints.values():
        if row.family != "configs_per_pool" or row.sense is not Sense.LE or row.rhs >= 2:
            continue
        if all(c >= 1 and name_parts(n)[1][:3] in opened for n, c in row.coefficients.items()):
            held.add(name_parts(row.name)[1])
    return held
