"""Mending a join that overfills a region's supply: the parts that use most of it are
re-solved within what the others leave (solver.part_join).

When the parts of a decomposed solve, each alone over the whole supply, together use
more GPUs of type g in region r than r holds (`gpu_supply[r,g]` broken by U - S GPUs,
with U = sum_p u_p the parts' use and S the row's right-hand side), the largest users
are given shares that fit: taking users from the largest down until their use covers
the excess U - S, each taken user p may use

    s_p = u_p - (U - S) x u_p / sum_{taken} u_q

GPUs of that type in r (the excess split in proportion to use), and the others keep
theirs; sum_p s_p + sum_{not taken} u_p = S. A part re-solved within its shares is a
restriction of its program (any plan of it is a plan of the part), so the mended join,
when it holds every row, is a plan of the whole; its cost is an upper bound, and the
bound stays what the parts solved without shares proved.

Only supply rows are mended so: the merge (solver.part_join) handles any row.
"""

from solver.lp import Constraint, Sense
from solver.row_names import GpuSupplyRow, split_name

Part = tuple[str, ...]


def supply_shares(
    broken: list[Constraint], values: dict[str, float], owner: dict[str, Part]
) -> dict[Part, dict[str, float]] | None:
    """For each broken supply row, the GPUs each taken part may use of it (the module
    docstring): part -> {row name: GPUs}. None when a broken row is not a supply row,
    or no part's use can make room (the excess lies outside the parts' columns)."""
    shares: dict[Part, dict[str, float]] = {}
    for row in broken:
        if split_name(row.name)[0] != GpuSupplyRow.family or row.sense is not Sense.LE:
            return None
        use: dict[Part, float] = {}
        for name, coefficient in row.coefficients.items():
            if name in owner and values.get(name, 0.0):
                use[owner[name]] = use.get(owner[name], 0.0) + coefficient * values[name]
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
