"""A test that must not hang the suite: `failing_after` raises in the test's thread when a
block runs past its seconds (SIGALRM; no timing assertion, so a slow machine passes and
a loop without end does not)."""

import signal
from collections.abc import Iterator
from contextlib import contextmanager


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
