"""Mending a join that overfills a region's supply (solver.decompose.join): two restrictions
of the whole, so each mended join that holds every row is a plan of it, priced against
the bound the parts solved without them proved.

Shares. When the parts of a decomposed solve, each alone over the whole supply,
together use more GPUs of type g in region r than r holds (`gpu_supply[r,g]` broken),
the largest users are given shares that fit: taking users from the largest down until
their use covers the excess U - S (U = sum_p u_p the parts' use, S the row's
right-hand side), each taken user p may use

    s_p = u_p - (U - S) x u_p / sum_{taken} u_q

GPUs of that type in r (the excess split in proportion to use), and the others keep
theirs; sum_p s_p + sum_{not taken} u_p = S. A part re-solved within its shares is a
restriction of its program.

Giving back. For one overfilled row, each user p is re-solved alone within
s_p = max(u_p - (U - S), 0): giving back the whole excess, or all it uses when that is
less (`giving_back`). Each such re-solve costs d_p more and gives back b_p GPUs; the
users cheapest per GPU given back (d_p / b_p) are taken until they give back the excess
(`cheapest_givers`), the others keep their solutions. Also a restriction, one round of
re-solves (side by side), and the costs add up: the parts are independent apart from
the row. Where the shares put the whole excess on the largest users, this finds the
users with a cheap substitute, and on the scaling bench's region-loss instances it
proves a plan closer to the bound than the shares, and sooner than the price rounds
(the README's speed notes).

The local merge. Where no route joins r to another region (`reach`: no failover into or
out of it), the parts that use the row are solved together as one program with every
column held at the join's value (`fixed_outside`) except the purchases and the columns
of r: their pools there, and the load served there. That program is the merged part's,
restricted to what moves in r, so it is small to solve, and it gives the merged part's
optimum in r: r's load cannot go elsewhere, and it is found sooner than by merging the
users (a relaxation, solved in full). With region loss every region is joined to others,
and the local program keeps their load served free: it is then as large as the whole and
no better than the shares (the README's speed notes), so it is not tried there.

Only supply rows are mended so: the merge (solver.decompose.join) handles any row.
"""

from collections.abc import Iterable

from solver.program.families.variables import PurchasedColumn
from solver.program.lp import Constraint, Sense
from solver.program.row_names import GpuSupplyRow, parse_name, split_name

Part = tuple[str, ...]


def supply_rows(broken: Iterable[Constraint]) -> list[Constraint] | None:
    """The broken rows when every one is a gpu_supply row (<=), else None: the rows the
    mends by shares and by price (solver.decompose.join_price) can mend."""
    rows = list(broken)
    for row in rows:
        if split_name(row.name)[0] != GpuSupplyRow.family or row.sense is not Sense.LE:
            return None
    return rows


def supply_shares(
    broken: list[Constraint], values: dict[str, float], owner: dict[str, Part]
) -> dict[Part, dict[str, float]] | None:
    """For each broken supply row, the GPUs each taken part may use of it (the module
    docstring): part -> {row name: GPUs}. None when a broken row is not a supply row,
    or no part's use can make room (the excess lies outside the parts' columns)."""
    rows = supply_rows(broken)
    if rows is None:
        return None
    shares: dict[Part, dict[str, float]] = {}
    for row in rows:
        use = row_use(row, values, owner)
        excess = row.activity(values) - row.rhs
        taken: list[Part] = []
        for part in sorted(use, key=lambda p: (-use[p], p)):
            if sum(use[p] for p in taken) >= excess:
                break
            taken.append(part)
        covered = sum(use[p] for p in taken)
        if covered < excess:
            return None
        for part in taken:
            shares.setdefault(part, {})[row.name] = use[part] - excess * use[part] / covered
    return shares


def row_use(row: Constraint, values: dict[str, float], owner: dict[str, Part]) -> dict[Part, float]:
    """Each part's use of the row at `values` (its columns' terms), where nonzero."""
    use: dict[Part, float] = {}
    for name, coefficient in row.coefficients.items():
        if name in owner and values.get(name, 0.0):
            use[owner[name]] = use.get(owner[name], 0.0) + coefficient * values[name]
    return use


def giving_back(
    row: Constraint, values: dict[str, float], owner: dict[str, Part]
) -> tuple[float, dict[Part, dict[str, float]]]:
    """For one overfilled supply row, the excess U - S and each user's share of the row
    when it is re-solved alone to give it back (the module docstring): s_p =
    max(u_p - (U - S), 0), part -> {row name: GPUs}."""
    excess = row.activity(values) - row.rhs
    use = row_use(row, values, owner)
    return excess, {part: {row.name: max(u - excess, 0.0)} for part, u in use.items()}


def cheapest_givers(offers: dict[Part, tuple[float, float]], excess: float) -> list[Part] | None:
    """The users whose re-solves (`giving_back`) to join: `offers` maps a user to (what
    its re-solve costs more, GPUs it gives back); the cheapest per GPU given back are
    taken until they give back the excess. None when all of them together do not."""
    givers = sorted(
        (part for part, (_, back) in offers.items() if back > 0),
        key=lambda part: (offers[part][0] / offers[part][1], part),
    )
    taken, back = [], 0.0
    for part in givers:
        if back >= excess:
            break
        taken.append(part)
        back += offers[part][1]
    return taken if back >= excess else None


Routes = dict[tuple[str, str], tuple[tuple[str, str, float], ...]]


def reach(routes: Routes, region: str) -> set[str]:
    """`region` and every region a route of some scenario joins to it, either way: where
    a change of the region's capacity can move load to or from."""
    near = {region}
    for pairs in routes.values():
        for origin, destination, _ in pairs:
            if region in (origin, destination):
                near |= {origin, destination}
    return near


def fixed_outside(
    columns: Iterable[str], values: dict[str, float], regions: set[str]
) -> dict[str, tuple[float, float]]:
    """Bounds that hold every column at its value in `values` (0 when absent) except the
    purchases and the columns of the `regions` (a pool's there, or load served there):
    the local program of `local_merge`."""
    bounds = {}
    for name in columns:
        index = parse_name(name)
        if index.family == PurchasedColumn.family or getattr(index, "region", None) in regions:
            continue
        value = values.get(name, 0.0)
        bounds[name] = (value, value)
    return bounds
