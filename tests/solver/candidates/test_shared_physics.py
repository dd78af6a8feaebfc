"""Physics shared across candidate tables (`solver.candidates.pools.shared_physics`): the
levers' re-solves read what an earlier table computed with the same inputs, and only
that."""

import pytest

from models.io.loading import load_instance
from solver.candidates import pools
from solver.candidates.table import build_candidates
from tests.paths import INSTANCES


@pytest.fixture(scope="module")
def instance():
    """One workload's unified candidates (4): the tables here are built 4 times a test,
    0.4 s each for chat-3region's 55 (3.7 s of CPU the module, now 0.25 s)."""
    return load_instance(INSTANCES / "unified.yaml")


def _counted(monkeypatch) -> list[int]:
    """Count the physics evaluations (`replica_capacity` as pools.py calls it)."""
    calls = [0]
    real = pools.replica_capacity

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(pools, "replica_capacity", counting)
    return calls


def _curves(table) -> list:
    return [
        (c.key, c.curve.points, c.ladder, c.failover)
        for candidates in table.by_workload.values()
        for c in candidates
    ]


def test_a_second_table_with_the_same_inputs_computes_nothing_and_reads_the_same(
    instance, monkeypatch
):
    calls = _counted(monkeypatch)
    alone = build_candidates(instance)
    computed = calls[0]
    assert computed > 0
    with pools.shared_physics():
        first = build_candidates(instance)
        assert calls[0] == 2 * computed  # the first table in the block computes it all
        second = build_candidates(instance)
        assert calls[0] == 2 * computed  # ... the second reads it
    assert _curves(first) == _curves(second) == _curves(alone)
    build_candidates(instance)  # after the block nothing is shared
    assert calls[0] == 3 * computed


def test_other_inputs_are_computed_again(instance, monkeypatch):
    # a TTFT target 20% tighter changes every configuration's targets: nothing is read
    calls = _counted(monkeypatch)
    (workload,) = instance.workloads
    slo = workload.slo.model_copy(update={"ttft_p99_ms": workload.slo.ttft_p99_ms * 0.8})
    tighter = instance.model_copy(update={"workloads": [workload.model_copy(update={"slo": slo})]})
    with pools.shared_physics():
        build_candidates(instance)
        before = calls[0]
        alone = build_candidates(tighter)
        assert calls[0] - before > 0
    again = calls[0]
    assert _curves(build_candidates(tighter)) == _curves(alone)
    assert calls[0] - again == again - before  # unshared, the same count


def test_nested_blocks_share_the_outer_one_and_the_outer_end_clears_it():
    with pools.shared_physics():
        outer = pools._SHARED
        with pools.shared_physics():
            assert pools._SHARED is outer
        assert pools._SHARED is outer
    assert pools._SHARED is None


def test_a_worker_seeded_with_the_blocks_physics_computes_none_of_it(monkeypatch):
    # explain --levers solves its base within the block, and each lever worker starts
    # from what it holds (`seeded_share`, the pool's initializer): a table of the same
    # inputs then computes nothing and reads the same
    instance = load_instance(INSTANCES / "unified.yaml")
    calls = _counted(monkeypatch)
    with pools.shared_physics():
        first = build_candidates(instance)
        start = pools.seeded_share()
    computed = calls[0]
    assert computed > 0
    monkeypatch.setattr(pools, "_SHARED", None)  # put back after the test
    start()  # in a fresh worker: nothing shared yet
    again = build_candidates(instance)
    assert calls[0] == computed and len(pools._SHARED) == computed  # one per pool size
    assert _curves(again) == _curves(first)
    pools._SHARED = None
    pools.seeded_share()()  # outside any block: a worker starts with nothing
    assert pools._SHARED == {}
