"""A group's capacity search reuses what evaluations at other loads found
(models.colocation.load_edge), and ends where a search of its own ends.

Before: every period of a day and every month of a horizon whose tail peaks differed ran
the whole search again (a floor, the doublings and ten halvings: 14-18 evaluations of
0.05-0.3 s each per group), so a 3-month instance of three small co-located workloads
(tests/fixtures/colocation-3-months.yaml, 10 periods a day) spent 61 of its 64 s in
template builds and stopped at its 60 s limit. The physics here is a stand-in with a
known edge (loads summing to at most 10 requests/s meet the SLO), counted per call."""

import pytest

from models.colocation.coresident import group_capacity
from models.colocation.load_edge import LoadEdge
from models.colocation.shared_layout import Member
from models.serving.replica import Limit
from solver.colocation.templates import TemplateMemo
from tests.solver.colocation.conftest import EDGE_RPS

STEPS = 10


def _members(*loads: float) -> list[Member]:
    return [Member(f"w{i}", None, None, None, rate) for i, rate in enumerate(loads)]


def _search(loads: tuple[float, ...], known: LoadEdge | None = None):
    return group_capacity(None, _members(*loads), None, bisection_steps=STEPS, known=known)


def test_the_edge_answers_below_a_feasible_and_above_an_infeasible_evaluation():
    edge = LoadEdge()
    edge.record((2.0, 4.0), True)
    edge.record((3.0, 6.0), False)
    assert edge.known((1.0, 4.0)) is True  # below (2, 4) member by member
    assert edge.known((3.0, 7.0)) is False  # above (3, 6)
    assert edge.known((2.5, 3.0)) is None  # neither: 2.5 > 2, and 3 < 6
    edge.record((2.5, 5.0), True)  # dominates (2, 4): only the larger is kept
    assert edge.feasible == [(2.5, 5.0)]


def test_a_search_at_twice_the_loads_runs_the_physics_once(physics):
    first = _search((1.0, 2.0))
    # the floor (0), the doublings 1, 2, 4 (3, 6, 12 requests/s: 4 fails) and 10 halvings
    # of [2, 4]: 1 + 3 + 10 evaluations, the bracket's ends among them
    assert len(physics) == 1 + 3 + STEPS
    # s* within 2 / 2^10 below the edge's 10 / 3
    assert EDGE_RPS / 3 - 2 / 2**STEPS < first.load_scale <= EDGE_RPS / 3
    assert first.limit is Limit.TPOT and first.limiting_member == "w0"

    known = LoadEdge()
    _search((1.0, 2.0), known)
    physics.clear()
    twice = _search((2.0, 4.0), known)
    # every point of the search at (2, 4) is one of the first's (s x 2 = 2s, both exact
    # in binary): each is answered, and only the bound past s* is evaluated, for its limit
    assert len(physics) == 1
    physics.clear()
    alone = _search((2.0, 4.0))
    assert twice == alone  # the same s*, capacities and limit as a search of its own
    assert twice.capacity_requests_per_s == first.capacity_requests_per_s


@pytest.mark.parametrize("loads", [(1.5, 3.0), (0.7, 1.4), (1.0, 3.0)])
def test_another_period_ends_where_its_own_search_ends_with_fewer_evaluations(physics, loads):
    known = LoadEdge()
    for earlier in ((1.0, 2.0), (1.2, 2.4)):
        _search(earlier, known)
    physics.clear()
    reused = _search(loads, known)
    with_edge = len(physics)
    physics.clear()
    alone = _search(loads)
    assert reused == alone
    assert with_edge < len(physics)


def test_memos_over_other_tables_share_what_was_learnt():
    memo = TemplateMemo(table=None)
    memo.edges[("a", "b"), "h100-sxm", "fp8", "fp8"] = LoadEdge([(1.0, 1.0)])
    assert memo.over(table=None).edges is memo.edges
