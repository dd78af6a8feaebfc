"""The co-location tests' stand-in for the group physics: a known edge, counted per call."""

from types import SimpleNamespace

import pytest

from models.colocation import coresident
from models.serving.replica import Limit

EDGE_RPS = 10.0
"""A group's loads meet the SLO while they sum to at most this many requests/s."""


@pytest.fixture
def physics(monkeypatch):
    """The loads the stand-in physics was asked at; they meet the SLO while they sum to
    at most EDGE_RPS, and past it the TPOT of the first member breaks. It reports no
    member's operating point, so a template's capacity search halves its bracket as
    the bisection does (solver.colocation.capacity_search: no ratio to guide it)."""
    asked: list[tuple[float, ...]] = []

    def evaluate_group(layout, members, efficiency, factor, pool=1):
        del layout, efficiency, factor, pool
        loads = tuple(m.requests_per_s for m in members)
        asked.append(loads)
        meets = sum(loads) <= EDGE_RPS
        return SimpleNamespace(
            stable=True,
            members=(),
            meets_slo=meets,
            limit=None if meets else Limit.TPOT,
            limiting_member=None if meets else members[0].name,
        )

    monkeypatch.setattr(coresident, "evaluate_group", evaluate_group)
    return asked
