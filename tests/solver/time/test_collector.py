"""The collector's threshold while a horizon in time is solved (solver.time.collector):
held at YOUNG_OBJECTS while any holder is inside, the one found put back when the last
leaves; the static path leaves it alone."""

import gc
import threading
from pathlib import Path

import pytest

import solver.solve as pipeline
from models.io.loading import load_instance
from solver.settings import SolveSettings
from solver.time.collector import YOUNG_OBJECTS, fewer_collections

INSTANCES = Path(__file__).parents[3] / "instances"


@pytest.fixture
def defaults():
    """Python's default thresholds around the test, whatever ran before."""
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*found)


def test_the_young_threshold_is_held_inside_and_put_back_after(defaults):
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_OBJECTS, 10, 10)
        with fewer_collections():  # nested: still held
            assert gc.get_threshold() == (YOUNG_OBJECTS, 10, 10)
        assert gc.get_threshold() == (YOUNG_OBJECTS, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_larger_threshold_is_not_lowered(defaults):
    gc.set_threshold(50_000, 20, 5)
    with fewer_collections():
        assert gc.get_threshold() == (50_000, 20, 5)
    assert gc.get_threshold() == (50_000, 20, 5)


def test_the_last_of_two_threads_to_leave_puts_it_back(defaults):
    """Thread A enters, B enters, A leaves (B still inside: held), B leaves (put back to
    the one A found, not to the one B saw inside)."""
    inside, leave_a, seen = threading.Event(), threading.Event(), []

    def a():
        with fewer_collections():
            inside.set()
            leave_a.wait()

    thread = threading.Thread(target=a)
    thread.start()
    inside.wait()
    with fewer_collections():
        leave_a.set()
        thread.join()
        seen.append(gc.get_threshold())
    assert seen == [(YOUNG_OBJECTS, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)


def test_it_is_held_while_a_horizon_in_time_is_solved_and_not_on_the_static_path(
    defaults, monkeypatch
):
    """What `_solve_table` (the one sequence) finds: YOUNG_OBJECTS for diurnal-chat-batch
    (its day's periods), 700 for chat-3region (static); 700 again once each ends."""
    seen = []

    class Stop(Exception):
        pass

    def record(*_args, **_kwargs):
        seen.append(gc.get_threshold()[0])
        raise Stop

    monkeypatch.setattr(pipeline, "candidate_table", lambda *_: None)
    monkeypatch.setattr(pipeline, "_solve_table", record)
    for name in ("diurnal-chat-batch", "chat-3region"):
        instance = load_instance(INSTANCES / f"{name}.yaml")
        with pytest.raises(Stop):
            pipeline._solve_one(instance, SolveSettings.of(instance))
        assert gc.get_threshold() == (700, 10, 10)
    assert seen == [YOUNG_OBJECTS, 700]
