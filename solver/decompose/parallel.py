"""Solving several independent programs at once, in worker processes.

Worker processes are started with `fork` while it is safe (`start_method`: on Linux,
one thread in this process and no solver library called yet, the command-line case),
else with `spawn` (no forked copy of a solver library's state, which HiGHS and OR-Tools
do not survive); each solves with one solver thread, so `processes_for(n)` programs run
side by side on as many cores. A forked worker starts with everything this process has
imported, where a spawned one first imports the planner (the README's speed notes). A
worker process never
starts workers of its own: inside one (a `batch` or `explain` job) everything runs in
that process, as before.

A spawned process costs its start-up (about half a second: the interpreter and the
planner's modules), so programs go to workers only when there are at least two of them, they are
big enough to be worth it (`PARALLEL_MIN_INTEGERS` integer variables in all) and cores
are idle (`idle_cores`); the caller learns how many processes ran and says so (the
plan's `solver.method`).

Within one solve (`workers_kept`), the workers that evaluated the candidates are the ones
that then solve the workload programs: they start once, and what they imported stays
loaded. There, work can also be handed out at once and collected later (`start_each`):
the workload programs are built and solved in the workers while this process builds the
whole program the join is checked against.

With `SolveSettings.executor: ray` the same programs go to Ray tasks instead (one CPU
each, `ray_tasks`), on the cluster `ray.init` finds or, where none is running, a local
one of this machine's cores started on first need (and shut down with the
`workers_kept` block that started it). The tasks import the planner from the directory
this process imports it from (their PYTHONPATH). Ray is the optional `ray` extra; the
command line refuses `--executor ray` without it (cli/options.py).
"""

import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from solver.backends import Backend, get_backend
from solver.backends.base import library_called
from solver.program.lp import LinearProgram, SolveResult
from solver.settings import SolveSettings, machine_threads
from solver.workers import new_pool, process_pool

PARALLEL_MIN_INTEGERS = 400
"""Integer variables, over all the programs, below which they are solved in this process
(a worker's start-up would cost more than the solves)."""


def idle_cores() -> float:
    """Cores free for workers: the cores this process may use less the work of others,
    the smaller of the one-minute load average not due to this process and the tasks
    runnable now besides this one (`/proc/loadavg`): the average alone still counts a
    run that ended seconds ago (after the test suite it stays near 2 for a minute, and
    a large solve would take twice as long in one process), the count alone is one
    instant. A machine busy with other work has none either way."""
    try:
        load = max(os.getloadavg()[0] - 1.0, 0.0)
    except OSError:  # no load average on this platform: assume the cores are free
        load = 0.0
    running = _runnable_now()
    others = load if running is None else min(load, float(max(running - 1, 0)))
    return machine_threads() - others


def _runnable_now() -> int | None:
    """Tasks runnable now, this one included (the fourth field of /proc/loadavg,
    `running/total`); None where there is no such file."""
    try:
        with open("/proc/loadavg", encoding="ascii") as file:
            return int(file.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def processes_for(programs: int) -> int:
    """Worker processes for `programs` independent solves: one per idle core, no more
    than the programs, and 1 (this process) inside a worker, on a one-core machine, or
    when other work keeps the cores busy (workers would only share them, and the
    processes' start-up and the copies between them make that slower than one process)."""
    import multiprocessing  # here, not at the top: a one-model solve never asks (issue 19)

    if multiprocessing.parent_process() is not None:
        return 1
    return max(1, min(programs, machine_threads(), math.floor(idle_cores())))


def worth_parallel(programs: Sequence[LinearProgram]) -> bool:
    """Whether the programs are many and big enough for worker processes."""
    integers = sum(lp.size()["integer_variables"] for lp in programs)
    return worth_workers(len(programs), integers)


def worth_workers(programs: int, integers: int) -> bool:
    """Whether `programs` programs with `integers` integer variables in all (or a lower
    bound on them) are many and big enough for worker processes."""
    return programs >= 2 and integers >= PARALLEL_MIN_INTEGERS and processes_for(2) > 1


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
        started_ray = _KEPT.pop("ray", False)
        _KEPT.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if started_ray:
            import ray

            ray.shutdown()


@contextmanager
def worker_pool(processes: int) -> Iterator[Any]:
    """A process pool of `processes` workers for the block (solver.workers: they end with
    this process), started by `start_method`: the kept one inside `workers_kept`
    (started, or restarted larger, on first need), otherwise a pool of its own, shut
    down when the block ends."""
    if not _KEPT.get("active"):
        with process_pool(processes, start_method()) as pool:
            yield pool
        return
    pool = _KEPT.get("pool")
    if pool is None or pool._max_workers < processes:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        pool = _KEPT["pool"] = new_pool(processes, start_method())
    yield pool


def start_method() -> str:
    """`fork` on Linux while this process runs one thread and has called no solver
    library (solver.backends.base.library_called), else `spawn`.

    A forked child shares nothing live with this process then: ProcessPoolExecutor
    forks every worker before it starts its own management thread."""
    import threading

    if sys.platform == "linux" and threading.active_count() == 1 and not library_called():
        return "fork"
    return "spawn"


class Started:
    """Tasks handed to the kept workers at once (`start_each`), their results collected
    later with `results`; `abandon` drops what has not started."""

    def __init__(self, futures: dict[Any, int]):
        self._futures = futures

    def results(
        self, stop: Callable[[Any], bool] = lambda _result: False
    ) -> Iterator[tuple[int, Any]]:
        """(index, result) of each task as it ends; `stop` True on a result drops the
        tasks not yet started and ends the iteration."""
        from concurrent.futures import FIRST_COMPLETED, wait

        while self._futures:
            done, _ = wait(self._futures, return_when=FIRST_COMPLETED)
            for future in done:
                index = self._futures.pop(future)
                result = future.result()
                yield index, result
                if stop(result):
                    self.abandon()
                    return

    def abandon(self) -> None:
        """Cancel the tasks not started (a running one ends by itself, within the run's
        deadline, before the workers are shut down)."""
        for future in self._futures:
            future.cancel()
        self._futures.clear()


def start_each(
    task: Callable[..., Any], arguments: Sequence[tuple], processes: int
) -> Started | None:
    """Hand `task(*args)` for every args in `arguments` to the kept workers (`workers_kept`,
    started with `processes` workers on first need), in order: the workers take them
    first come, first served. None outside a `workers_kept` block (a pool of its own
    would end with the call) or with fewer than 2 processes. Where the arguments carry
    settings with `executor: ray`, the tasks are Ray tasks (`processes` is Ray's to
    decide)."""
    if arguments and _executor_of(arguments[0]) == "ray":
        ray = ray_tasks()
        remote = ray.remote(num_cpus=1, max_retries=0)(task)
        return Started({remote.remote(*args).future(): i for i, args in enumerate(arguments)})
    if processes < 2 or not _KEPT.get("active"):
        return None
    with worker_pool(processes) as pool:
        return Started({pool.submit(task, *args): index for index, args in enumerate(arguments)})


def _solve_one(
    backend: str,
    lp: LinearProgram,
    settings: SolveSettings,
    start: dict[str, float] | None = None,
) -> SolveResult:
    """One solve in a worker: one solver thread, from `start` if given."""
    return get_backend(backend).run(lp, replace(settings, threads=1), start=start)


def solve_built(
    build: Callable[[int], tuple[LinearProgram, Backend]],
    order: Sequence[int],
    settings: Callable[[int], SolveSettings],
    processes: int,
    stop: Callable[[SolveResult], bool] = lambda _result: False,
    start: Callable[[int], dict[str, float] | None] = lambda _index: None,
) -> Iterator[tuple[int, SolveResult]]:
    """Solve programs 0..n-1 (`order` names them, the order they start in across the
    workers), each built by `build(i)` (the program and the backend that solves it) only
    when it is next: this process builds while the workers solve, so none waits for
    every program to be built. Yields (index, result) as each ends; one process solves
    them in index order.

    `settings(i)` is asked when program i is handed to a worker (so its time limit is
    what is left of the run's when it starts); `stop` is called with each result, and
    True drops the programs not yet started (an infeasible part ends a decomposition);
    `start(i)` is a solution program i's search may start from (None: none). With
    `executor: ray` in the settings, the programs are Ray tasks (`_solve_on_ray`)."""
    if order and settings(order[0]).executor == "ray":
        yield from _solve_on_ray(build, order, settings, stop, start)
        return
    if processes <= 1:
        for index in sorted(order):
            lp, backend = build(index)
            result = backend.run(lp, settings(index), start=start(index))
            yield index, result
            if stop(result):
                return
        return
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    unbuilt = list(order)
    ready: list[tuple[int, LinearProgram, Backend]] = []

    def build_next() -> None:
        index = unbuilt.pop(0)
        ready.append((index, *build(index)))

    with worker_pool(processes) as pool:
        running: dict[Future, int] = {}

        def hand_out() -> None:
            while (ready or unbuilt) and len(running) < processes:
                if not ready:
                    build_next()
                index, lp, backend = ready.pop(0)
                task = (_solve_one, backend.name, lp, settings(index), start(index))
                running[pool.submit(*task)] = index

        hand_out()
        while running:
            if unbuilt and len(ready) < processes:
                build_next()  # the next ones, while the workers solve
                done = {future for future in running if future.done()}
            else:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                result = future.result()
                yield index, result
                if stop(result):
                    unbuilt.clear()
                    ready.clear()
                    for other in running:
                        other.cancel()
                    return
            hand_out()


def _executor_of(arguments: tuple) -> str:
    """The executor of the settings among a task's arguments ("local" without any)."""
    return next((a.executor for a in arguments if isinstance(a, SolveSettings)), "local")


def ray_tasks() -> Any:
    """The `ray` module, connected: to the cluster already initialised, else to a local
    Ray of this machine's cores started here, whose tasks import the planner from where
    this process does (kept until the `workers_kept` block ends, if one is running)."""
    import ray

    if not ray.is_initialized():
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        ray.init(
            num_cpus=machine_threads(),
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
        if _KEPT.get("active"):
            _KEPT["ray"] = True
    return ray


def _solve_on_ray(
    build: Callable[[int], tuple[LinearProgram, Backend]],
    order: Sequence[int],
    settings: Callable[[int], SolveSettings],
    stop: Callable[[SolveResult], bool],
    start: Callable[[int], dict[str, float] | None],
) -> Iterator[tuple[int, SolveResult]]:
    """`solve_built` on Ray: each program built in `order` and handed to a Ray task as
    soon as it is built (one CPU, one solver thread each); (index, result) as each
    ends; `stop` True cancels the tasks not ended."""
    ray = ray_tasks()
    remote = ray.remote(num_cpus=1, max_retries=0)(_solve_one)
    pending = {}
    for index in order:
        lp, backend = build(index)
        pending[remote.remote(backend.name, lp, settings(index), start(index))] = index
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            index = pending.pop(ref)
            result = ray.get(ref)
            yield index, result
            if stop(result):
                for other in pending:
                    ray.cancel(other)
                return
