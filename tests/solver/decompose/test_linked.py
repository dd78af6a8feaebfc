"""Items joined into groups by links (solver.decompose.linked)."""

from hypothesis import given
from hypothesis import strategies as st

from solver.decompose.linked import linked_groups


def test_groups_by_hand():
    """a-c and d-e linked, c-e later: {a, c, d, e} and {b}, each in the items' order,
    groups in the order of their first item."""
    assert linked_groups("abcde", [("a", "c"), ("d", "e"), ("c",)]) == [
        ["a", "c"],
        ["b"],
        ["d", "e"],
    ]
    assert linked_groups("abcde", [("c", "a"), ("e", "d"), ("e", "c")]) == [
        ["a", "c", "d", "e"],
        ["b"],
    ]


@given(st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=4), max_size=6))
def test_groups_partition_the_items_and_hold_every_link(links):
    items = list(range(10))
    groups = linked_groups(items, links)
    assert sorted(i for g in groups for i in g) == items
    where = {i: n for n, g in enumerate(groups) for i in g}
    assert all(len({where[i] for i in link}) == 1 for link in links)
