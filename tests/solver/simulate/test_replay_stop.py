"""The engine-effects replay asks its caller's `stop` before each pool and each run with
an effect off: once it says so, the pools left are not replayed and are named, none
dropped (explain's deadline: solver.analysis.explain._engine_effects)."""

import pytest

from models.io.loading import load_instance
from solver.settings import SolveSettings
from solver.simulate.effects import effects_until
from solver.simulate.replay_size import surviving
from solver.solve import solve
from tests.paths import INSTANCES

SHORT_S = 20.0  # seconds of arrivals: enough to replay, quick


@pytest.fixture(scope="module")
def solved():
    instance = load_instance(INSTANCES / "region-loss-3.yaml")
    return instance, solve(instance, SolveSettings.of(instance, threads=1))


def _entries(plan) -> list[str]:
    """`workload region phase` of each replayed entry of scenario none (decode phases ride
    with their prefill)."""
    return [
        f"{workload} {region} {phase}"
        for workload, region, phase, _, _ in surviving(plan, "none")
        if not phase.startswith("decode")
    ]


def test_a_stop_already_true_replays_nothing_and_names_every_pool(solved):
    instance, plan = solved
    rows, left_out = effects_until(instance, plan, lambda: True, duration_s=SHORT_S)
    assert rows == ()
    assert list(left_out) == _entries(plan) and left_out


def test_a_stop_after_the_first_pool_keeps_it_as_replayed_alone(solved):
    # a pool of one configuration is asked 1 + 4 times (its start, each effect off): a stop
    # true from the 6th question on keeps the first pool, the same as with no stop, and
    # names every later one
    instance, plan = solved
    whole, none_left = effects_until(instance, plan, None, duration_s=SHORT_S)
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 5

    rows, left_out = effects_until(instance, plan, stop, duration_s=SHORT_S)
    entries = _entries(plan)
    assert none_left == ()
    assert len(entries) > 1
    assert rows == whole[:1]
    assert list(left_out) == entries[1:]
