"""A template's capacity search guided by how far each evaluation lies from the bound
(solver.colocation.capacity_search): the s*, capacities and limit of
models.colocation.coresident.group_capacity's bisection, with fewer runs of the physics.

The physics here is a stand-in with a known edge: a group meets its SLO while its loads
sum to at most EDGE_RPS, and its first member's p99 TPOT is (sum of loads / EDGE_RPS)^2
times the target (so the ratio r crosses 1 at the edge, curved as a latency is)."""

import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.colocation import coresident
from models.colocation.coresident import group_capacity
from models.colocation.load_edge import LoadEdge
from models.colocation.shared_layout import Member
from models.serving.edge_search import bisect_edge
from models.serving.replica import LatencyTargets, Limit
from solver.colocation.capacity_search import POOR_PROBES, guided_capacity, last_passing

EDGE_RPS = 10.0
STEPS = 10
TARGET_S = 0.05


@pytest.fixture
def curved(monkeypatch):
    """The loads the stand-in physics was asked at (the module docstring)."""
    asked: list[tuple[float, ...]] = []

    def evaluate_group(layout, members, efficiency, factor, pool=1):
        del layout, efficiency, factor, pool
        loads = tuple(m.requests_per_s for m in members)
        asked.append(loads)
        ratio = (sum(loads) / EDGE_RPS) ** 2
        meets = ratio <= 1
        first = SimpleNamespace(
            tpot_p99_s=ratio * TARGET_S,
            ttft_p99_s=0.0,
            targets=LatencyTargets(tpot_p99_s=TARGET_S),
        )
        return SimpleNamespace(
            stable=True,
            members=(first,),
            memory=SimpleNamespace(used_bytes=1.0, hbm_bytes=2.0),
            meets_slo=meets,
            limit=None if meets else Limit.TPOT,
            limiting_member=None if meets else members[0].name,
        )

    monkeypatch.setattr(coresident, "evaluate_group", evaluate_group)
    return asked


def _members(*loads: float) -> list[Member]:
    return [Member(f"w{i}", None, None, None, rate) for i, rate in enumerate(loads)]


def test_the_same_capacity_as_the_bisection_by_hand_in_fewer_runs(curved):
    # loads (3, 1.5) sum to 4.5: the edge is at s = 10 / 4.5 = 2.222. The doubling meets
    # at 1 and 2 and fails at 4; the grid of [2, 4] is 2 + k x 2 / 1024, and the last
    # point within the edge is k = floor(0.2222 x 512) = floor(113.78) = 113:
    # s* = 2 + 113 / 512 = 2.220703125, capacities 3 s* and 1.5 s*, the limit read at
    # k = 114 (TPOT, member w0)
    members = _members(3.0, 1.5)
    bisected = group_capacity(None, members, None, 1.0, bisection_steps=STEPS)
    bisection_runs = len(curved)
    curved.clear()
    guided = guided_capacity(None, members, None, 1.0, STEPS)
    assert guided == bisected
    assert guided.load_scale == 2 + 113 / 512
    assert guided.capacity_requests_per_s == (3 * (2 + 113 / 512), 1.5 * (2 + 113 / 512))
    assert (guided.limit, guided.limiting_member) == (Limit.TPOT, "w0")
    # the bisection: 0 (ends at once), 1, 2 and 4, ten halvings, then the limit's point
    # again (kept: not run twice) = 14 runs; the secant lands beside the edge sooner
    assert bisection_runs == 14
    assert len(curved) < bisection_runs


def test_what_the_edge_knows_costs_no_run_and_is_learnt(curved):
    # an edge that knows (2, 1) meets the SLO and (6, 3) does not: the doubling's 1 and 2
    # are answered and its 4 (loads 12, 6) too; every run is recorded in it
    members = _members(3.0, 1.5)
    edge = LoadEdge()
    edge.record((6.0, 3.0), True)
    edge.record((12.0, 6.0), False)
    found = guided_capacity(None, members, None, 1.0, STEPS, known=edge)
    assert found.load_scale == 2 + 113 / 512
    assert (0.0, 0.0) not in curved and (6.0, 3.0) not in curved and (12.0, 6.0) not in curved
    s = found.load_scale
    assert edge.known((3.0 * s, 1.5 * s)) is True
    assert edge.known((3.0 * (s + 2 / 1024), 1.5 * (s + 2 / 1024))) is False


def test_an_evaluation_at_hand_is_read_not_run_again(curved):
    # the evaluation at the peaks (scale 1) that column generation ran is handed over
    members = _members(3.0, 1.5)
    at_peaks = coresident.evaluate_group(None, members, None, 1.0)
    curved.clear()
    found = guided_capacity(None, members, None, 1.0, STEPS, at_hand={1.0: at_peaks})
    assert found.load_scale == 2 + 113 / 512
    assert (3.0, 1.5) not in curved


def _bisected(passes, cells: int) -> int:
    low, _ = bisect_edge(lambda x: passes(round(x)), 0.0, float(cells), int(math.log2(cells)))
    return round(low)


@settings(max_examples=100, deadline=None)
@given(
    edge=st.floats(0.0, 1.0, exclude_max=True),
    power=st.floats(0.2, 5.0),
    steps=st.integers(1, 12),
    blind=st.sets(st.integers(0, 4096), max_size=40),
    kink=st.floats(0.0, 1.0),
)
def test_the_search_ends_where_the_bisection_ends(edge, power, steps, blind, kink):
    # any monotone test with any rising ratio (curved, kinked, or unknown at some points:
    # `blind`, as the edge's answers are): the same k as the bisection's, and at most
    # POOR_PROBES + 1 probes per halving
    cells = 2**steps

    def ratio_at(k: int) -> float:
        x = k / cells
        bent = x if x < kink else kink + 4 * (x - kink)
        return ((1 + bent) / (1 + edge)) ** power

    def passes(k: int) -> bool:
        return k / cells <= edge

    probes = []

    def probe(k: int):
        probes.append(k)
        return passes(k), None if k in blind else ratio_at(k)

    found = last_passing(probe, 0, cells, ratio_at(0), None)
    assert found == _bisected(passes, cells)
    assert all(0 < k < cells for k in probes) and len(set(probes)) == len(probes)
    assert len(probes) <= (POOR_PROBES + 1) * steps
