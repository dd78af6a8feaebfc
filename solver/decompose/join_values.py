"""The join of a decomposed solve's parts (solver.decompose.join): the parts' own columns
and each region's purchases rounded up on their sum (`joined_values`, `joined_purchases`),
the rows of the whole program the join breaks (`broken_rows`), the parts merged around
them (`merged_parts`), the bound the parts give on the whole (`parts_bound`), and the
join where the clock stopped parts (`cover_join`).

The join where the clock stopped parts: the cover built without a solver
(solver.decompose.cover.covering_plan) stands in for their columns. A join needs a plan
of every part. Under a tight time limit the last parts get little time
(solver.decompose.join_run.part_share), and one stopped before a plan left no join: the
solve went on to the whole program and, with no time for it either, ended on the cover
alone (solver.decompose.regions.plan.covered), its gap stated against the cover's own
bound. A part stopped early can also hold a plan far dearer than its optimum (the 10 x 20
x 6 region-loss instance with single GPUs, seed 0, at a 20 s limit under load: w01's plan
$152,066 at a 56% gap, its optimum $73,526), where the cover carried the same workload
for less.

The cover is a plan of the whole program. `cover_join` starts from it and takes, part by
part, the part's own columns (`per_workload`) where that makes the whole cheaper,
purchases recomputed on the sum (`joined_purchases`); a part without a plan keeps the
cover's columns. Every row that names one part's columns only holds (that part's plan, or
the cover's); the rows parts share (supply, purchases, power) are checked with every
other row (`broken_rows`), and where the mix breaks one the cover alone is the plan.
Either way a plan of the whole, an upper bound. The bound is the parts' (a part without a
plan counts 0: no plan costs less) or the cover's, whichever is higher: both bound the
whole. (`COVER_STOPPED` in solver.decompose.join switches it.)"""

from dataclasses import dataclass, replace

from models.operations.site import gpus_bought, node_gpus
from solver.candidates.replica_dominance import Bounds
from solver.decompose.cover import covering_plan
from solver.decompose.join_price import result_bound
from solver.decompose.linked import linked_groups
from solver.decompose.workload_parts import Part
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.pool_sizes import PoolSizeIsColumn
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import FEASIBILITY_TOLERANCE, Constraint, LinearProgram, SolveResult
from solver.program.row_names import GroupsColumn, ReplicasColumn, split_name
from solver.settings import SolveSettings


def joined_values(
    program: FleetProgram, parts: list[Part], results: dict[Part, SolveResult]
) -> tuple[dict[str, float], dict[str, Part]]:
    """The join's values (the parts' own columns, and the purchases on their sum), and
    the part each own column comes from."""
    values: dict[str, float] = {}
    owner: dict[str, Part] = {}
    for part in parts:
        for name, value in results[part].values.items():
            if per_workload(name):
                values[name] = value
                owner[name] = part
    values.update(joined_purchases(program, values))
    return values, owner


def per_workload(name: str) -> bool:
    """Columns the join takes from a part's solution (purchases are rounded on the
    whole; the size binaries are not the program's)."""
    family = split_name(name)[0]
    return family not in (PurchasedColumn.family, ServersColumn.family, PoolSizeIsColumn.family)


def joined_purchases(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """purchased[r,g] = max(0, used - existing), in whole servers servers[r,g] where
    bought so (models.operations.site.gpus_bought), for the joined replicas."""
    sets = program.sets
    used = {key: 0.0 for key in sets.offers}
    for pool in sets.pools:
        name = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
        count = values.get(name, 0.0)
        used[(pool.region, pool.candidate.gpu)] += round(count) * pool.candidate.gpus
    for t in program.groups.templates:
        for r, g in sets.offers:
            if g == t.gpu:
                count = values.get(GroupsColumn(t.key, r).name(), 0.0)
                used[(r, g)] += round(count) * t.gpus
    purchases = {}
    for (r, g), offer in sets.offers.items():
        n = node_gpus(sets.instance, g)
        bought = gpus_bought(round(used[(r, g)]), offer.existing, n)
        purchases[PurchasedColumn(r, g).name()] = float(bought)
        if ServersColumn(r, g).name() in program.lp.variables:
            purchases[ServersColumn(r, g).name()] = float(bought // n)
    return purchases


def broken_rows(
    lp: LinearProgram, values: dict[str, float], bounds: Bounds, owner: dict[str, Part]
) -> list[Constraint] | None:
    """The rows of the whole program the join breaks ([] when it is a plan of it); None
    when no merge can mend it: a part's own column out of its bounds, or a purchase out
    of its bounds while no row is broken (whole servers rounded past what is on offer).
    A purchase past its bound with a broken row is the broken supply row's doing."""
    purchase_out = False
    for name, var in lp.variables.items():
        lower, upper = bounds.get(name, (var.lower, var.upper))
        value = values.get(name, 0.0)
        if value < lower - FEASIBILITY_TOLERANCE or (
            upper is not None and value > upper + FEASIBILITY_TOLERANCE
        ):
            if name in owner:
                return None
            purchase_out = True
    broken = [row for row in lp.constraints.values() if row.broken_by(values)]
    if purchase_out and not broken:
        return None
    return broken


def merged_parts(
    parts: list[Part], broken: list[Constraint], owner: dict[str, Part], values: dict[str, float]
) -> list[Part] | None:
    """The parts with those that carry each broken row (a nonzero column of it) merged,
    in the program's order; None when a broken row is carried by one part or none (the
    part's own solution breaks it, or only the join's purchases do)."""
    links = []
    for row in broken:
        carrying = {owner[v] for v in row.coefficients if v in owner and values[v] != 0.0}
        if len(carrying) < 2:
            return None
        links.append(carrying)
    order = {w: i for i, w in enumerate(w for part in parts for w in part)}
    merged = [
        tuple(sorted((w for part in group for w in part), key=order.__getitem__))
        for group in linked_groups(parts, links)
    ]
    return sorted(merged, key=lambda part: order[part[0]])


def parts_bound(
    settings: SolveSettings,
    parts: list[Part],
    results: dict[Part, SolveResult],
    floors: dict[str, float] | None = None,
) -> float:
    """The bound the parts' results give on the whole: sum over the parts of
    objective x (1 - gap), each at least the sum of its workloads' `floors` (bounds on
    each workload's own program: its LP relaxation's, solver.decompose.scenario_cuts
    `lp_floors`; a part's program costs at least its workloads' apart, as the parts'
    bound argues in solver.decompose.by_workload)."""
    floors = floors or {}
    return sum(
        max(result_bound(results[part], settings.mip_gap), sum(floors.get(w, 0.0) for w in part))
        for part in parts
    )


def lp_floors(program: FleetProgram) -> dict[str, float]:
    """Each workload's bound from the LP rounds run on this program
    (solver.decompose.scenario_cuts: its own program's LP relaxation, with the Hall rows
    found, solved to optimality), kept in its `region_costs`; {} where none ran."""
    known = program.region_costs.get("lp_floors")
    return known[1] if known is not None and known[0] is program.lp else {}


def relative_gap(cost: float, bound: float) -> float:
    """The relative gap of a plan of `cost` above `bound`."""
    return max((cost - bound) / cost, 0.0) if cost > 0 else 0.0


def with_parts_bound(result: SolveResult, joined: SolveResult) -> SolveResult:
    """The whole program's `result` with its gap against the better of its own bound and
    the parts' (the bound under the `joined` result: cost x (1 - gap)), both valid
    bounds of the whole."""
    if result.mip_gap is None or result.objective is None or joined.mip_gap is None:
        return result
    bound = (joined.objective or 0.0) * (1 - joined.mip_gap)
    return replace(result, mip_gap=min(result.mip_gap, relative_gap(result.objective, bound)))


@dataclass(frozen=True)
class CoverJoin:
    """A plan of the whole program mixed from the parts' plans and the cover's."""

    values: dict[str, float]
    cost: float
    covered: int
    """Parts whose columns are the cover's (no plan, or a dearer one)."""
    bound: float | None
    """The cover's bound on the whole (solver.decompose.cover.Cover.bound)."""


def cover_join(
    program: FleetProgram, bounds: Bounds, parts: list[Part], results: dict[Part, SolveResult]
) -> CoverJoin | None:
    """The cover with each part's own columns taken from its plan where that lowers the
    whole cost (in the parts' order; a part without a result keeps the cover's), the
    cover alone where the mix breaks a row; None when the cover finds no plan."""
    lp = program.lp
    cover = covering_plan(with_bounds(lp, bounds) if bounds else lp)
    if cover is None:
        return None
    values = dict(cover.values)
    cost = lp.objective_value(values)
    covered = len(parts)
    for part in parts:
        result = results.get(part)
        if result is None:
            continue
        own = {n: v for n, v in result.values.items() if per_workload(n) and n in lp.variables}
        trial = values | own
        trial.update(joined_purchases(program, trial))
        trial_cost = lp.objective_value(trial)
        if trial_cost < cost:
            values, cost, covered = trial, trial_cost, covered - 1
    if covered < len(parts) and broken_rows(lp, values, bounds, {}) != []:
        values, cost, covered = dict(cover.values), cover.cost, len(parts)
    return CoverJoin(values, cost, covered, cover.bound)
