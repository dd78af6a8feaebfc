"""What is known of one group's feasible loads, kept from one evaluation to the next.

A group's feasible loads (every member's SLO and the memory holding on one replica,
`models.colocation.coresident`) are down-closed: latencies and KV rise with every
member's load. So an evaluation at loads f that holds answers for every load vector
below it, and one at g that fails for every vector above it:

    v feasible     if v <= f member by member for some f evaluated feasible
    v infeasible   if v >= g member by member for some g evaluated infeasible
    v unknown      otherwise (it must be evaluated)

The same group (members, their models, token mixes and SLOs, one layout) is evaluated
again in every period of a day and every month of a horizon at other loads; a search
along the period's ray (`coresident.group_template`'s doubling and halvings) asks at
points far from the edge that an earlier period's evaluations already answer, and only
the points between the known feasible and infeasible vectors need the physics. Where
the periods' loads are proportional (one profile, one growth), those are one or two
points a period. The answers are the physics' own wherever it is monotone, which the
capacity search assumes already.

Groups of the same physics share one edge (`EdgeView`). The physics reads a member's
model architecture, token mix, SLO and load, not its name: two groups whose members are
alike but for their names (fine-tunes of one base, served as merged models, with one
token mix and SLO) are one group at other loads. Members alike are interchangeable, so
the edge keeps each class's loads sorted largest first, and v lies below f under some
matching of alike members exactly when it does so sorted (the k-th largest of v is at
most the k-th largest of f for every k). zipf-20-models' column generation (before it
settled the groups its checks answer, `solver.colocation.group_search`) checked 176 groups
at their peaks; the edges of their classes answered 151 of them, the same answers.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

Loads = tuple[float, ...]


def _below(v: Loads, f: Loads) -> bool:
    return all(a <= b for a, b in zip(v, f, strict=True))


@dataclass
class LoadEdge:
    """The evaluated loads of one group, in its members' order: the maximal feasible
    ones and the minimal infeasible ones (each list without vectors it dominates)."""

    feasible: list[Loads] = field(default_factory=list)
    infeasible: list[Loads] = field(default_factory=list)

    def known(self, loads: Loads) -> bool | None:
        """Whether `loads` meet every member's SLO as far as earlier evaluations tell
        (None: they do not tell)."""
        if any(_below(loads, f) for f in self.feasible):
            return True
        if any(_below(g, loads) for g in self.infeasible):
            return False
        return None

    def record(self, loads: Loads, meets: bool) -> None:
        """Keep one evaluation's answer."""
        if meets:
            self.feasible = [f for f in self.feasible if not _below(f, loads)] + [loads]
        else:
            self.infeasible = [g for g in self.infeasible if not _below(loads, g)] + [loads]


@dataclass(frozen=True)
class EdgeView:
    """One group's view of the edge its physics class shares: its members' loads in the
    edge's order (class by class, each class's loads largest first)."""

    edge: LoadEdge
    classes: tuple[tuple[int, ...], ...]
    """Each class's members (indices into the group's members), in the edge's class
    order."""

    def shared(self, loads: Sequence[float]) -> Loads:
        """`loads` (the group's members' order) in the edge's order."""
        return tuple(
            load for part in self.classes for load in sorted((loads[i] for i in part), reverse=True)
        )

    def known(self, loads: Loads) -> bool | None:
        """`LoadEdge.known` of the loads in the edge's order."""
        return self.edge.known(self.shared(loads))

    def record(self, loads: Loads, meets: bool) -> None:
        """`LoadEdge.record` of the loads in the edge's order."""
        self.edge.record(self.shared(loads), meets)
