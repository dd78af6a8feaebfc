"""A call run beside the caller in a thread, its result (or its error) handed over when
asked: the pipeline's pricing LP while the plan is read back (solver.solve)."""

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def in_background(run: Callable[..., T], *args) -> Callable[[], T]:
    """`run(*args)` started in a thread; the returned function waits for it and gives its
    result (or raises what it raised). The pricing LP runs so while the plan is read
    back: HiGHS releases the interpreter lock while it solves, so the two share the
    cores."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, run(*args)))
        except BaseException as error:  # handed to the waiting caller
            outcome.append((False, error))

    thread = threading.Thread(target=target, name="fleetplan-pricing", daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return result
