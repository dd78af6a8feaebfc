"""A group template's capacity with fewer runs of the physics: the s* and the limit of
`models.colocation.coresident.group_capacity`, its bisection's probes chosen by how far
each evaluation lies from the group's bound.

The bisection's answer. `group_capacity` doubles the load scale from 1 while the group
meets every SLO, which brackets the edge in [low, high] (low meets them, high does not),
then halves the bracket `steps` times keeping the feasible end. Every midpoint it can
visit lies on the grid

    g_k = low + k w,   w = (high - low) / 2^steps,   k = 0 .. 2^steps

(low and high are 0 or powers of two: every g_k is exact in floats, and the midpoint of
two grid points is the grid point between them, to the bit). Where the test is monotone
along the ray, which the bisection and the edges of `models.colocation.load_edge` assume
already (latencies and KV rise with the loads), the bisection ends at the last grid
point that meets them: s* = g_k with g_k meeting them and g_{k+1} not, `beyond` =
g_{k+1}. Any search for that k ends at the same s*, and the limit is read from the same
evaluation at g_{k+1}: the same template.

Guided probes. An evaluation also says how near the bound the group is: the ratio

    r(s) = max( max_i p99 TPOT_i / target,  max_i p99 TTFT_i / target,  HBM used / HBM )

(the group meets everything at r <= 1 where it keeps up; an engine that cannot keep up
has no ratio). r rises smoothly with s, so the secant through a meeting probe and a
failing one with ratios predicts where r crosses 1 (the end kept twice in a row has its
distance from 1 halved: the Illinois rule, against a curve's one-sided secants), and the
probe is the grid point just below the prediction (just above it after a probe that
met the SLOs). POOR_PROBES secant probes in a row that leave more than half the bracket
are followed by the bisection's midpoint, so a search takes at most POOR_PROBES + 1
probes per halving; near a smooth edge the secant lands beside it in two or three. The
points the edge answers (`known`) cost no physics and carry no ratio, as in
`group_capacity`, and the physics' run at the members' peaks, where column generation
ran it, is read as it is (`at_hand`).

zipf-20-models: its seven templates, the same, from 32 runs of the physics against the
bisection's 56 (92 -> 68 with column generation's checks, which this leaves alone);
`tests/bench/test_capacity_search_bench.py` runs both side by side.
"""

import math
from collections.abc import Callable, Mapping, Sequence

from models.colocation import coresident
from models.colocation.coresident import MAX_LOAD_SCALE, GroupCapacity, GroupEvaluation
from models.colocation.load_edge import EdgeView, LoadEdge
from models.colocation.shared_layout import Member, SharedLayout
from models.physics.efficiency import Efficiency

POOR_PROBES = 2
"""Secant probes in a row that leave more than half the bracket before a halving."""
Probe = Callable[[int], tuple[bool, float | None]]
"""A test of grid point k: whether it passes, and its ratio r (None: not known)."""


def guided_capacity(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float,
    bisection_steps: int,
    known: LoadEdge | EdgeView | None = None,
    at_hand: Mapping[float, GroupEvaluation] | None = None,
) -> GroupCapacity:
    """`group_capacity(layout, members, efficiency, interference_factor,
    bisection_steps, known)`: the same s*, capacities and limit (the module docstring),
    the physics run at fewer scales; every evaluation is recorded in `known` as there.
    `at_hand`: evaluations of the group at some scales already (the members' peaks,
    checked by column generation: `solver.colocation.groups`), read as they are."""
    coresident.check_members(members, interference_factor)
    evaluated: dict[float, GroupEvaluation] = dict(at_hand or {})

    def at(scale: float) -> GroupEvaluation:
        if scale not in evaluated:
            found = coresident.evaluate_group(
                layout, [m.scaled(scale) for m in members], efficiency, interference_factor, 1
            )
            if known is not None:
                known.record(coresident.scaled_loads(members, scale), found.meets_slo)
            evaluated[scale] = found
        return evaluated[scale]

    def meets(scale: float) -> tuple[bool, float | None]:
        if scale in evaluated:
            return evaluated[scale].meets_slo, bound_ratio(evaluated[scale])
        answer = None if known is None else known.known(coresident.scaled_loads(members, scale))
        if answer is not None:
            return answer, None
        found = at(scale)
        return found.meets_slo, bound_ratio(found)

    if not meets(0.0)[0]:
        return coresident.capacity_of(members, 0.0, at(0.0))
    if all(m.requests_per_s == 0 for m in members):
        raise ValueError("a group template needs a positive planned load on some member")
    low, high = 0.0, 1.0
    ratios = {0.0: None}
    while (answer := meets(high))[0]:
        if high >= MAX_LOAD_SCALE:
            return coresident.capacity_of(members, high, at(high))
        ratios[high] = answer[1]
        low, high = high, high * 2
    ratios[high] = answer[1]
    cells = 2**bisection_steps
    width = (high - low) / cells

    def grid(k: int) -> float:
        return high if k == cells else low + k * width

    last = last_passing(lambda k: meets(grid(k)), 0, cells, ratios[low], ratios[high])
    return coresident.capacity_of(members, grid(last), at(grid(last + 1)))


def last_passing(
    probe: Probe,
    low: int,
    high: int,
    low_ratio: float | None = None,
    high_ratio: float | None = None,
) -> int:
    """The largest k in [low, high) that passes a monotone test, taken to pass at `low`
    and fail at `high` (neither probed; their ratios where known): the k a bisection of
    [low, high] ends at, found by secant probes where the ratios allow (the module
    docstring) and halvings where they do not."""
    moved: bool | None = None  # the end the last probe moved: True low, False high
    poor = 0  # secant probes in a row that did not halve the bracket
    while high - low > 1:
        crossing = None if poor >= POOR_PROBES else _secant(low, high, low_ratio, high_ratio)
        if crossing is None:
            k = (low + high) // 2
        else:  # below the crossing, or just above it after a probe that passed
            k = min(max(math.floor(crossing) + (moved is True), low + 1), high - 1)
        passes, ratio = probe(k)
        before = high - low
        if passes:
            if moved is True and high_ratio is not None:  # Illinois: the far end halved
                high_ratio = 1.0 + (high_ratio - 1.0) / 2
            low, low_ratio, moved = k, ratio, True
        else:
            if moved is False and low_ratio is not None:
                low_ratio = 1.0 - (1.0 - low_ratio) / 2
            high, high_ratio, moved = k, ratio, False
        poor = 0 if crossing is None or 2 * (high - low) <= before else poor + 1
    return low


def _secant(low: int, high: int, low_ratio: float | None, high_ratio: float | None) -> float | None:
    """Where the line through (low, low_ratio) and (high, high_ratio) crosses 1; None
    without both ratios or where they do not rise."""
    if low_ratio is None or high_ratio is None or not high_ratio > low_ratio:
        return None
    crossing = low + (1.0 - low_ratio) * (high - low) / (high_ratio - low_ratio)
    return crossing if math.isfinite(crossing) else None


def bound_ratio(found: GroupEvaluation) -> float | None:
    """r: the largest of every member's p99 TPOT and TTFT over its target and the HBM
    used over the HBM (None where an engine cannot keep up: no operating point)."""
    if not found.stable or not found.members:
        return None
    ratios = [found.memory.used_bytes / found.memory.hbm_bytes]
    for member in found.members:
        targets = member.targets
        if targets.tpot_p99_s is not None:
            ratios.append(member.tpot_p99_s / targets.tpot_p99_s)
        if targets.ttft_p99_s is not None:
            ratios.append(member.ttft_p99_s / targets.ttft_p99_s)
    ratio = max(ratios)
    return ratio if math.isfinite(ratio) else None
