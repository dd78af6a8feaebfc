"""Worker processes: the one home of fleetplan's process pools (issue 31), whose workers
end with the command that started them (issue 36).

Every pool is a `concurrent.futures.ProcessPoolExecutor` made here (`new_pool`,
`process_pool`): the decomposition's and the candidates' workers
(solver.decompose.parallel), `batch`, `sweep`, `explain` and the levers. A worker ends
with its parent however the parent ends:

- SIGINT (Ctrl-C) reaches the whole foreground process group, workers included.
- SIGTERM to the parent alone: the parent's handler (`_end_with_workers`, installed with
  the first pool, from the main thread) terminates every live worker, then ends the
  parent by the signal's previous disposition (the default: killed by SIGTERM). Python
  runs the handler when the main thread next runs Python code.
- SIGKILL to the parent (no handler can run): each worker runs a watchdog thread
  (`_watch_parent`) that ends the worker, within `WATCHDOG_S`, once its parent process
  is gone (`os.getppid()` is no longer the pid that started it: the worker has been
  handed to init or a subreaper).

A worker's standard output is /dev/null: it never writes the command's output, and it
never holds the caller's pipe open (`fleetplan solve ... | cat` ends when the command
does). Its SIGTERM disposition is the default again (a forked worker inherits the
parent's handler).

`multiprocessing` and `concurrent.futures` are imported on first use only: a small solve
never loads them (issue 19).
"""

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

WATCHDOG_S = 0.2
"""Seconds between a worker's looks at its parent process id."""
WORKER_ORPHANED_EXIT = 70
"""Exit status of a worker whose parent is gone (EX_SOFTWARE, as the command's own
internal errors): nothing reads it, it only names why the worker ended."""
ENDING_SIGNALS = (signal.SIGTERM,)
"""Signals on which the parent terminates its workers before it ends."""

_PREVIOUS: dict[int, Any] = {}
"""The disposition each of `ENDING_SIGNALS` had before `_end_with_workers` replaced it."""


def new_pool(
    processes: int, start_method: str = "spawn", then: Callable[[], None] | None = None
) -> Any:
    """A `ProcessPoolExecutor` of `processes` workers started with `start_method`
    (`spawn`, or `fork` where the caller knows it is safe), whose workers end with this
    process (see the module docstring), each running `then` (a module-level function)
    before its first task. The caller shuts it down."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _terminate_workers_on_signals()
    return ProcessPoolExecutor(
        max_workers=processes,
        mp_context=multiprocessing.get_context(start_method),
        initializer=_worker_starts,
        initargs=(os.getpid(), then),
    )


@contextmanager
def process_pool(processes: int, start_method: str = "spawn") -> Iterator[Any]:
    """`new_pool` for the block, shut down when it ends: after the work on a normal end,
    at once (tasks not started are cancelled) when the block raises."""
    pool = new_pool(processes, start_method)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _terminate_workers_on_signals() -> None:
    """Install `_end_with_workers` for each of `ENDING_SIGNALS` once, where this is the main
    thread (only it may set handlers) and the signal is not ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in ENDING_SIGNALS:
        current = signal.getsignal(number)
        if current is _end_with_workers or current == signal.SIG_IGN:
            continue
        _PREVIOUS[number] = current
        signal.signal(number, _end_with_workers)


def _end_with_workers(number: int, frame: Any) -> None:
    """Terminate every live worker, then let the signal end this process as it would have."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.terminate()
    previous = _PREVIOUS.pop(number, signal.SIG_DFL)
    signal.signal(number, previous if previous is not None else signal.SIG_DFL)
    os.kill(os.getpid(), number)


def _worker_starts(parent_pid: int, then: Callable[[], None] | None = None) -> None:
    """In each worker, before its first task: the default SIGTERM, standard output on
    /dev/null, the watchdog on the parent, then the pool's own `then`."""
    for number in ENDING_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    watchdog = threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="fleetplan-parent-watchdog", daemon=True
    )
    watchdog.start()
    if then is not None:
        then()


def _watch_parent(parent_pid: int) -> None:
    """End this worker at once when its parent process is gone."""
    import time

    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_S)
    os._exit(WORKER_ORPHANED_EXIT)
