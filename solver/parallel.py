"""Solving several independent programs at once, in worker processes.

Worker processes are started with `spawn` (no forked copy of a solver library's state,
which HiGHS and OR-Tools do not survive) and each solves with one solver thread, so
`processes_for(n)` programs run side by side on as many cores. A worker process never
starts workers of its own: inside one (a `batch` or `explain` job) everything runs in
that process, as before.

A process costs its start-up (about half a second: the interpreter and the solver
library), so programs go to workers only when there are at least two of them, they are
big enough to be worth it (`PARALLEL_MIN_INTEGERS` integer variables in all) and cores
are idle (`idle_cores`); the caller learns how many processes ran and says so (the
plan's `solver.method`).

Within one solve (`workers_kept`), the workers that evaluated the candidates are the ones
that then solve the workload programs: they start once, and what they imported stays
loaded.
"""

import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from solver.backends import Backend, get_backend
from solver.lp import LinearProgram, SolveResult
from solver.settings import SolveSettings, machine_threads

PARALLEL_MIN_INTEGERS = 400
"""Integer variables, over all the programs, below which they are solved in this process
(a worker's start-up would cost more than the solves)."""


def idle_cores() -> float:
    """Cores free for workers: the cores this process may use less the one-minute load
    average not due to this process (a machine shared with other work has none)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume the cores are free
        load = 0.0
    return machine_threads() - max(load - 1.0, 0.0)


def processes_for(programs: int) -> int:
    """Worker processes for `programs` independent solves: one per idle core, no more
    than the programs, and 1 (this process) inside a worker, on a one-core machine, or
    when other work keeps the cores busy (workers would only share them: on the shared
    2-core machine at a load of 4, the 10 x 20 x 6 region-loss bench took 14.6 s in two
    workers against 9.5 s in one process)."""
    import multiprocessing  # here, not at the top: a one-model solve never asks (issue 19)

    if multiprocessing.parent_process() is not None:
        return 1
    return max(1, min(programs, machine_threads(), math.floor(idle_cores())))


def worth_parallel(programs: Sequence[LinearProgram]) -> bool:
    """Whether the programs are many and big enough for worker processes."""
    integers = sum(lp.size()["integer_variables"] for lp in programs)
    return len(programs) >= 2 and integers >= PARALLEL_MIN_INTEGERS and processes_for(2) > 1


_KEPT: dict[str, Any] = {}
"""The pool of the `workers_kept` block in progress: `active` while one runs, `pool`
once a use has started it."""


@contextmanager
def workers_kept() -> Iterator[None]:
    """Within the block, the worker pools `worker_pool` hands out are one pool, kept
    between uses and shut down when the block ends (a nested block joins the outer one).
    A large solve's candidate evaluation and workload solves share their workers: the
    second use does not pay the workers' start-up (~0.3 s each) again."""
    if _KEPT.get("active"):
        yield
        return
    _KEPT["active"] = True
    try:
        yield
    finally:
        pool = _KEPT.pop("pool", None)
        _KEPT.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def worker_pool(processes: int) -> Iterator[Any]:
    """A `spawn` process pool of `processes` workers for the block: the kept one inside
    `workers_kept` (started, or restarted larger, on first need), otherwise a pool of
    its own, shut down when the block ends."""
    import multiprocessing  # here: a small solve never loads it (issue 19)
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    if not _KEPT.get("active"):
        with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
            yield pool
        return
    pool = _KEPT.get("pool")
    if pool is None or pool._max_workers < processes:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        pool = _KEPT["pool"] = ProcessPoolExecutor(max_workers=processes, mp_context=context)
    yield pool


def _solve_one(backend: str, lp: LinearProgram, settings: SolveSettings) -> SolveResult:
    """One solve in a worker: one solver thread."""
    return get_backend(backend).run(lp, replace(settings, threads=1))


def solve_each(
    backend: Backend,
    programs: Sequence[LinearProgram],
    settings: Callable[[int], SolveSettings],
    processes: int,
    stop: Callable[[SolveResult], bool] = lambda _result: False,
) -> Iterator[tuple[int, SolveResult]]:
    """Solve every program, `processes` at a time, yielding (index, result) as each ends.

    Args:
        backend: The backend (workers look it up again by its name).
        programs: The programs, independent of each other.
        settings: The settings of program i, asked when it is handed to a worker (so
            its time limit is what is left of the run's when it starts).
        processes: Worker processes; 1 solves them in this process, in order.
        stop: Called with each result; True cancels the programs not yet started (an
            infeasible part ends a decomposition).
    """
    if processes <= 1:
        for index, lp in enumerate(programs):
            result = backend.run(lp, settings(index))
            yield index, result
            if stop(result):
                return
        return
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    with worker_pool(processes) as pool:
        # Largest first (by integer variables): the last program to start is a small one,
        # so the workers end together rather than one waiting on a late large solve.
        waiting = sorted(enumerate(programs), key=lambda item: -item[1].size()["integer_variables"])
        running: dict[Future, int] = {}

        def hand_out() -> None:
            while waiting and len(running) < processes:
                index, lp = waiting.pop(0)
                running[pool.submit(_solve_one, backend.name, lp, settings(index))] = index

        hand_out()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                result = future.result()
                yield index, result
                if stop(result):
                    waiting.clear()
                    for other in running:
                        other.cancel()
                    return
            hand_out()
