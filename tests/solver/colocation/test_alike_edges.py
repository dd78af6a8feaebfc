"""Groups alike but for their members' names share what their evaluations found
(models.colocation.load_edge.EdgeView, solver.colocation.groups._edge).

The physics reads a member's model architecture, token mix, SLO and load, never its name,
so a group of three fine-tunes of one base at loads (6, 4, 3) and another of three others
at (5, 4, 2.5) are one group at two load vectors: the first meeting its SLO answers the
second without the physics. Before, each group had an edge of its own, and
zipf-20-models' column generation ran the physics for all 176 groups it checked (15 of
its 21 s); the shared edges answer 151 of them, with the same answers."""

import pytest

import solver.colocation.groups
from models.colocation.load_edge import EdgeView, LoadEdge
from solver.candidates.table import build_candidates
from solver.colocation.groups import build_groups
from tests.solver.colocation.test_colocation_program import _instance


def test_alike_members_are_matched_largest_to_largest():
    # members 0 and 2 alike (class A), member 1 of class B: the edge's order is A's loads
    # largest first, then B's
    edge = LoadEdge()
    view = EdgeView(edge, ((0, 2), (1,)))
    assert view.shared((1.0, 5.0, 3.0)) == (3.0, 1.0, 5.0)
    view.record((2.0, 9.0, 4.0), True)  # kept as (4, 2, 9)
    assert edge.feasible == [(4.0, 2.0, 9.0)]
    # (1.5, 8, 3.5): A sorted (3.5, 1.5) <= (4, 2), B 8 <= 9: below it
    assert view.known((1.5, 8.0, 3.5)) is True
    # (4.5, 1, 0.5): A sorted (4.5, 0.5), and 4.5 > 4: no matching puts it below
    assert view.known((4.5, 1.0, 0.5)) is None
    view.record((3.0, 5.0, 3.0), False)  # kept as (3, 3, 5)
    # (3, 6, 3.5): A sorted (3.5, 3) >= (3, 3), B 6 >= 5: above the failure
    assert view.known((3.0, 6.0, 3.5)) is False
    # another group's view of the same edge, its members in another order
    other = EdgeView(edge, ((1,), (0, 2)))
    assert other.known((4.0, 2.0, 2.0)) is None  # (2, 4, 2): A = (2, 2), B = 4; 4 > 2
    assert EdgeView(edge, ((2, 1), (0,))).known((9.0, 1.0, 2.0)) is True  # (2, 1, 9)


def test_a_build_over_shared_edges_finds_the_same_templates_with_fewer_runs(physics, monkeypatch):
    # five fine-tunes of Llama 3.1 8B, one mix and SLO: every group of two is one group at
    # other loads, and so is every group of three
    instance = _instance({"a": 6.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 2.5})
    table = build_candidates(instance)
    shared = build_groups(instance, table)
    shared_runs = len(physics)
    physics.clear()
    # one edge per group, as before: a member's kind is its name
    monkeypatch.setattr(
        solver.colocation.groups, "_kind", lambda instance, candidate: candidate.workload
    )
    apart = build_groups(instance, table)
    assert shared.templates == apart.templates
    assert shared.search == apart.search
    assert shared.templates  # groups share (the stand-in's edge: 10 requests/s)
    assert shared_runs < len(physics)


@pytest.mark.parametrize("second", [0.5, 0.8, 1.25])
def test_a_build_after_another_takes_the_path_of_a_build_of_its_own(physics, second):
    # The second build (another period's peaks) reads the first's edges for its physics,
    # but its search settles groups by its own checks alone: the same templates and the
    # same search as a build of its own
    demands = {"a": 6.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 2.5}
    first = _instance(demands)
    later = _instance({w: second * rate for w, rate in demands.items()})
    table = build_candidates(first)
    edges = {}
    build_groups(first, table, edges=edges)
    after = build_groups(later, table, edges=edges)
    alone = build_groups(later, table)
    assert after.templates == alone.templates
    assert after.search == alone.search
