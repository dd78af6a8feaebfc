"""Pricing the supply rows a join overfills (solver.decompose.join): a Lagrangian bound, and
joins that fit.

The parts of a decomposed solve each see the whole supply. Where their join takes more
GPUs of type g in region r than r holds (`gpu_supply[r,g]`: sum_p u_p <= S broken),
give the row a price lam >= 0 ($/month per GPU) and re-solve its users with lam x u_p
added to their cost. For any lam >= 0

    LB(lam) = sum_{p not a user} bound_p + sum_{p a user} bound_p(lam) - sum_k lam_k S_k

is a lower bound on the whole program: its optimum x* has sum_p u_p(x*) <= S_k, so
cost(x*) >= sum_p [cost_p(x*_p) + sum_k lam_k u_{p,k}(x*_p)] - sum_k lam_k S_k, and
each bracket is at least what part p's priced program can reach (its bound). A part
that uses none of the rows keeps its unpriced bound: pricing only raises its cost, and
its solution stays optimal. At lam = 0 this is the parts' bound of the join; a price
near the row's marginal value raises it, and the priced users then take less of the
row, so their join may fit and be a plan.

The first price is the mend's own (solver.decompose.join_mend): what the mended join costs above
the overfilled one, over the GPUs it had to give back (`first_prices`). Later prices
bisect (`next_prices`) on g_k = u_k - S_k, the row's excess at the priced join: a row
still overfilled doubles its price (that price is known too low), a row with room
halves the distance down to the highest price known too low (0 at first). A
subgradient (Polyak) step was tried first: on the 10 x 50 x 6 region-loss bench
instance it moved from $1,080 to $1,037 and $994 per GPU-month, each priced join
$21-22k/month dearer than the mended one (the users left the row with room);
bisection reached $270, where the priced join fits and is proved, in two steps.

The priced users are solved unreduced across pools of the priced regions
(solver.candidates.swap_dominance leaves a region alone when its supply is in question): the
reduction compares costs that the price changes there.
"""

from collections.abc import Iterable

from solver.decompose.join_mend import Part, row_use
from solver.program.lp import Constraint, LinearProgram, SolveResult

Prices = dict[str, float]
"""gpu_supply row name -> lam, $/month per GPU of the row."""


def row_users(
    rows: Iterable[Constraint], values: dict[str, float], owner: dict[str, Part]
) -> set[Part]:
    """The parts with a nonzero column in some of the rows."""
    return {part for row in rows for part in row_use(row, values, owner)}


def excess(rows: Iterable[Constraint], values: dict[str, float]) -> dict[str, float]:
    """g_k = u_k - S_k per row: GPUs used above (> 0) or below (< 0) what it holds."""
    return {row.name: row.activity(values) - row.rhs for row in rows}


def first_prices(
    rows: list[Constraint], values: dict[str, float], extra_cost: float
) -> Prices | None:
    """One price for every row: the mend's `extra_cost` ($/month above the overfilled
    join `values`) over the GPUs the rows are overfilled by; None unless both are
    positive."""
    over = sum(max(g, 0.0) for g in excess(rows, values).values())
    if over <= 0 or extra_cost <= 0:
        return None
    return {row.name: extra_cost / over for row in rows}


def next_prices(
    prices: Prices, rows: list[Constraint], values: dict[str, float], below: Prices
) -> tuple[Prices, Prices]:
    """The next prices by bisection, and the prices known too low: a row the priced
    join `values` still overfills gets a higher price (twice this one, or halfway to
    the lowest price tried that emptied it enough), a row with room a lower one (halfway
    down to the highest price known too low, 0 at first)."""
    g = excess(rows, values)
    low = dict(below)
    new = {}
    for name, lam in prices.items():
        if g[name] > 0:
            low[name] = max(low.get(name, 0.0), lam)
            new[name] = 2 * lam
        else:
            new[name] = (low.get(name, 0.0) + lam) / 2
    return new, low


def priced_objective(lp: LinearProgram, prices: Prices) -> LinearProgram:
    """`lp` (a copy) with lam_k x (the row's GPUs) added to the cost, for every priced
    row it has."""
    objective = dict(lp.objective)
    for name, lam in prices.items():
        row = lp.constraints.get(name)
        if row is None or not lam:
            continue
        for var, coefficient in row.coefficients.items():
            objective[var] = objective.get(var, 0.0) + lam * coefficient
    copy = LinearProgram(lp.name, dict(lp.variables), dict(lp.constraints), objective)
    copy.objective_constant = lp.objective_constant
    return copy


def result_bound(result: SolveResult, requested_gap: float) -> float:
    """The bound one part's result proves: objective x (1 - gap), the requested gap
    standing in for one the backend did not give."""
    gap = result.mip_gap if result.mip_gap is not None else requested_gap
    return (result.objective or 0.0) * (1 - max(gap, 0.0))


def lagrangian_bound(
    parts: Iterable[Part],
    results: dict[Part, SolveResult],
    priced: dict[Part, SolveResult],
    rows: list[Constraint],
    prices: Prices,
    requested_gap: float,
) -> float:
    """LB(lam) (the module docstring): the unpriced bounds of the parts not re-solved,
    the priced bounds of those that were, less the price of every row's GPUs."""
    total = 0.0
    for part in parts:
        result = priced.get(part, results[part])
        total += result_bound(result, requested_gap)
    return total - sum(prices.get(row.name, 0.0) * row.rhs for row in rows)
