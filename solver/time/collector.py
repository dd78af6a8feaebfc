"""Python's cyclic garbage collector while a horizon in time is solved (issue 33).

A horizon in time allocates containers by the million (each month's periods program,
its blocks' programs pass after pass, their compiles and answers, the read-back's and
the verifier's records) while the run's long-lived objects (the catalog, the candidate
tables, earlier months' plans and programs) fill the heap. At Python's default
thresholds (700 new containers a young collection, a full one every 100 young ones,
`gc.get_threshold()` = (700, 10, 10)) the collector ran about 1,700 times in a solve of
procurement-3region, 12 of them full collections that walk the whole heap: 1.9 s of the
run's 16.6 s of CPU (thread time inside the collections, `gc.callbacks`; 4.4 s of wall
clock on the loaded machine). With `YOUNG_OBJECTS` new containers a young collection it
ran 89 times, none full: 0.33 s (5,000: 198 times, one full, 0.63 s; 50,000: 13 times,
0.39 s). The collector frees only reference cycles (everything else is freed when its
last reference goes), so nothing a solve computes depends on it: the same plans, the
process's peak memory higher by the cycles kept a little longer (134 -> 202 MB there).

`fewer_collections` holds that threshold while it is open and puts back the one it
found when the last holder leaves (threads and nested solves may hold it at once).
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_OBJECTS = 10_000
"""New containers a young collection waits for while a horizon is solved (the module
text); the older generations' thresholds are left as they are."""

_LOCK = threading.Lock()
_held: list[tuple[int, ...]] = []
"""The thresholds found by the first holder, once per holder still inside."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Young collections every `YOUNG_OBJECTS` new containers (never more often than the
    threshold found) while open; the threshold found put back when the last holder
    leaves."""
    with _LOCK:
        found = _held[0] if _held else gc.get_threshold()
        if not _held:
            gc.set_threshold(max(found[0], YOUNG_OBJECTS), *found[1:])
        _held.append(found)
    try:
        yield
    finally:
        with _LOCK:
            _held.pop()
            if not _held:
                gc.set_threshold(*found)
