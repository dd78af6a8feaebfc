"""A test that must not hang the suite: `failing_after` raises in the test's thread when a
block runs past its seconds (SIGALRM; no timing assertion, so a slow machine passes and
a loop without end does not). A test of a time limit runs on `ticking_clock`, a run's
clock that counts its readings instead of the wall: where the run stops, and what it
says, are the same on any machine at any load."""

import signal
import types
from collections.abc import Iterator
from contextlib import contextmanager

import cli.solve
import solver.progress
import solver.settings


@contextmanager
def failing_after(seconds: int, what: str) -> Iterator[None]:
    """Raise TimeoutError naming `what` when the block runs past `seconds`."""

    def alarm(signum, frame):
        raise TimeoutError(f"{what} did not return within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def ticking_clock(monkeypatch, tick_s: float) -> list[int]:
    """The run's clock (`time.monotonic` as solver.settings' Deadline, solver.progress and
    `fleetplan solve`'s start read it) made one that moves `tick_s` each time it is read,
    and stands still otherwise: a limit of L s passes at the (L / tick_s)-th reading, so a
    run stops at the first deadline check from there on, in the same stage every time.
    Returns the count of readings (a list of one int, updated as the run reads it)."""
    readings = [0]

    def monotonic() -> float:
        readings[0] += 1
        return readings[0] * tick_s

    clock = types.SimpleNamespace(monotonic=monotonic)
    for module in (cli.solve, solver.settings, solver.progress):
        monkeypatch.setattr(module, "time", clock)
    return readings
