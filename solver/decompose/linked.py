"""Items joined into groups by links: the connected groups of a few small unions."""

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def linked_groups(items: Sequence[T], links: Iterable[Iterable[T]]) -> list[list[T]]:
    """The items joined by any link (a link joins all its members, each one of `items`),
    as groups in the order of their first item, each in `items` order; an item in no
    link is a group of its own."""
    parent = {item: item for item in items}

    def root(item: T) -> T:
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for link in links:
        first, *others = link
        for other in others:
            parent[root(other)] = root(first)
    grouped: dict[T, list[T]] = {}
    for item in items:
        grouped.setdefault(root(item), []).append(item)
    return list(grouped.values())
