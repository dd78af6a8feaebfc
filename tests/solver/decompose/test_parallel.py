"""Worker processes (solver.decompose.parallel, solver.candidates.workers): the same answers as one
process, and the plan says how many processes solved it."""

import json
import subprocess
import sys

import pytest

import solver.candidates.workers as candidates_parallel
import solver.decompose.parallel as parallel
from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.program.lp import LinearProgram, Sense
from solver.settings import SolveSettings, machine_threads
from solver.solve import solve
from tests.synthetic import generated, generated_data, two_workloads

two_cores = pytest.mark.skipif(machine_threads() < 2, reason="needs two cores for two workers")


@pytest.fixture(scope="module", autouse=True)
def one_pool_for_the_module():
    """The module's tests hand their work to one pool of workers, kept between them
    (parallel.workers_kept, as one solve's candidates and workload programs share theirs):
    in this process a solver library has run, so each pool is spawned and each worker
    imports the planner first, and six pools of two were ~10 s of the module's 17 s of
    CPU. Every test still goes through `worker_pool` to the workers; a pool of one's own,
    shut down at the end of its block, is what every other test of the suite gets."""
    with parallel.workers_kept():
        yield


def knapsack(capacity: float) -> LinearProgram:
    """min 3x + 2y, x + y >= capacity, x, y integer: y = ceil(capacity), cost 2 ceil(c)."""
    lp = LinearProgram(f"cover-{capacity}")
    x = lp.add_variable("x", upper=100, integer=True)
    y = lp.add_variable("y", upper=100, integer=True)
    lp.add_objective({x: 3.0, y: 2.0})
    lp.add_constraint("cover", "demand", {x: 1.0, y: 1.0}, Sense.GE, capacity)
    return lp


@two_cores
def test_workers_solve_what_one_process_solves():
    programs = [knapsack(c) for c in (1.5, 2.5, 7.2)]
    settings = SolveSettings(time_limit_s=30)
    backend = get_backend("highs")

    def build(index):
        return programs[index], backend

    apart = dict(parallel.solve_built(build, [2, 1, 0], lambda _i: settings, processes=2))
    here = dict(parallel.solve_built(build, [2, 1, 0], lambda _i: settings, processes=1))
    for index, capacity in enumerate((1.5, 2.5, 7.2)):
        cost = 2.0 * -(-capacity // 1)  # y = ceil(capacity) at 2 each
        assert apart[index].objective == pytest.approx(cost)
        assert here[index].objective == pytest.approx(cost)


def test_stop_cancels_what_is_left_in_one_process():
    programs = [knapsack(1.0), knapsack(2.0), knapsack(3.0)]
    seen = list(
        parallel.solve_built(
            lambda index: (programs[index], get_backend("highs")),
            [2, 1, 0],
            lambda _i: SolveSettings(time_limit_s=30),
            processes=1,
            stop=lambda result: result.objective == pytest.approx(4.0),
        )
    )
    assert [index for index, _ in seen] == [0, 1]  # one process: in index order


@two_cores
def test_programs_are_built_in_order_only_as_the_workers_need_them():
    """Two workers, six programs, stop at the first result: the two handed out and at
    most two built ahead while they solve, so at most four of six are built, in the
    order given, each by the backend its build names."""
    built = []

    def build(index):
        built.append(index)
        return knapsack(1.5 + index), get_backend("cbc" if index == 5 else "highs")

    order = [5, 4, 3, 2, 1, 0]
    seen = list(
        parallel.solve_built(
            build, order, lambda _i: SolveSettings(time_limit_s=30), 2, stop=lambda _r: True
        )
    )
    assert len(seen) == 1
    assert 2 <= len(built) <= 4 and built == order[: len(built)]
    everything = dict(parallel.solve_built(build, order, lambda _i: SolveSettings(), 2))
    assert everything[5].solver == "cbc" and everything[0].solver == "highs"
    assert everything[5].objective == pytest.approx(2.0 * 7)  # ceil(6.5) at 2 each


@two_cores
def test_decomposed_in_parallel_gives_the_serial_plan(monkeypatch):
    inst = two_workloads()
    settings = SolveSettings.of(inst, time_limit_s=60)
    serial = solve(inst, settings)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_INTEGERS", 0)
    monkeypatch.setattr(parallel, "idle_cores", lambda: 2.0)
    apart = solve(inst, settings)
    assert serial.solver.method == "decomposed by workload: 2 independent programs joined"
    assert apart.solver.method == (
        "decomposed by workload: 2 independent programs joined, solved in 2 parallel processes"
    )
    assert apart.cost_per_month == pytest.approx(serial.cost_per_month, abs=1e-6)
    assert sorted((r.workload, r.region, r.key, r.count) for r in apart.replicas) == sorted(
        (r.workload, r.region, r.key, r.count) for r in serial.replicas
    )


@two_cores
def test_candidates_in_workers_are_the_table_of_one_process(monkeypatch):
    inst = two_workloads()
    monkeypatch.setattr(candidates_parallel, "PARALLEL_MIN_CONFIGURATIONS", 0)
    monkeypatch.setattr(parallel, "idle_cores", lambda: 2.0)
    apart = candidates_parallel.build_candidates_parallel(inst)
    here = build_candidates(inst)
    assert list(apart.by_workload) == list(here.by_workload) == ["chat", "code"]
    for w in here.by_workload:
        assert [c.key for c in apart.of(w)] == [c.key for c in here.of(w)]
        assert [c.requests_per_s for c in apart.of(w)] == [c.requests_per_s for c in here.of(w)]
    assert apart.evaluated == here.evaluated
    assert apart.usable == here.usable


@two_cores
def test_candidates_in_workers_keep_what_pruning_set_aside(monkeypatch):
    """The candidates each workload had before pruning travel back from the workers too,
    so that explain's re-solve without a pool gets back what it dominated
    (CandidateTable.without) however the table was built."""
    inst = generated(2, 2, 2, survive="none")
    monkeypatch.setattr(candidates_parallel, "PARALLEL_MIN_CONFIGURATIONS", 0)
    monkeypatch.setattr(parallel, "idle_cores", lambda: 2.0)
    apart = candidates_parallel.build_candidates_parallel(inst)
    here = build_candidates(inst)
    assert here.set_aside and apart.set_aside.keys() == here.set_aside.keys()
    for w, aside in here.set_aside.items():
        assert [c.key for c in apart.set_aside[w].paired] == [c.key for c in aside.paired]


def test_no_workers_inside_a_worker(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    assert parallel.processes_for(8) == 1


def test_no_workers_while_other_work_keeps_the_cores_busy(monkeypatch):
    monkeypatch.setattr(parallel, "idle_cores", lambda: 0.5)
    assert parallel.processes_for(8) == 1
    monkeypatch.setattr(parallel, "idle_cores", lambda: float(machine_threads()))
    assert parallel.processes_for(8) == min(8, machine_threads())


@pytest.mark.parametrize(
    ("load_average", "runnable", "busy"),
    [
        (3.0, 1, 0.0),  # a run that just ended: its load lingers, nothing else runs now
        (3.0, 3, 2.0),  # two other tasks running: min(3 - 1, 3 - 1) = 2
        (1.5, 4, 0.5),  # a burst now, the minute before quiet: min(1.5 - 1, 4 - 1)
        (0.2, 1, 0.0),  # idle: no load is negative
        (3.0, None, 2.0),  # no /proc/loadavg: the average alone, 3 - 1
    ],
)
def test_idle_cores_counts_the_smaller_of_the_average_and_the_runnable_now(
    monkeypatch, load_average, runnable, busy
):
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (load_average, 0.0, 0.0))
    monkeypatch.setattr(parallel, "_runnable_now", lambda: runnable)
    assert parallel.idle_cores() == pytest.approx(machine_threads() - busy)


def test_runnable_now_counts_at_least_this_process():
    runnable = parallel._runnable_now()
    assert runnable is None or runnable >= 1


def test_workers_are_spawned_once_a_solver_library_has_run():
    """A forked child would inherit HiGHS's thread pool half-alive: after a solve in
    this process, workers are spawned."""
    get_backend("highs").run(knapsack(2.5), SolveSettings("highs"))
    assert parallel.start_method() == "spawn"


@pytest.mark.skipif(sys.platform != "linux", reason="fork is used on Linux only")
def test_a_fresh_command_forks_its_workers():
    """A new process that has run no solver (a command) forks; one with a second thread
    does not."""
    code = (
        "import threading, solver.decompose.parallel as p; print(p.start_method());"
        "threading.Thread(target=lambda: threading.Event().wait(1), daemon=True).start();"
        "print(p.start_method())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["fork", "spawn"]


FORKING_COMMAND = """
import sys
import solver.decompose.parallel as parallel

parallel.PARALLEL_MIN_INTEGERS = 0  # workers for a small instance too
parallel.idle_cores = lambda: 2.0  # and whatever else keeps the machine's cores busy
started = parallel.new_pool

def new_pool(processes, method):
    print("pool", processes, method, file=sys.stderr)
    return started(processes, method)

parallel.new_pool = new_pool
from cli.app import main

main()
"""
"""`fleetplan ARGS` in a fresh process with workers for any instance on any load, saying
on stderr how each pool of workers was started."""


@two_cores
def test_forked_workers_give_the_plan_of_this_process(tmp_path):
    """`fleetplan solve` in a fresh process (a command's own start: it forks its workers;
    the size and load thresholds lifted, FORKING_COMMAND, so that 4 regions x 2 workloads
    x 2 GPU types generated go to 2 worker processes) writes the plan `solve` gives here.
    The same path as a 10 x 6 x 4 instance over parallel.PARALLEL_MIN_INTEGERS took, at
    under a tenth of its CPU: the stderr line shows the pool was forked, the plan's method
    that its 2 processes solved the workloads."""
    data = generated_data(4, 2, 2, survive="none")
    source = tmp_path / "gen.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "plan.json"
    command = [sys.executable, "-c", FORKING_COMMAND, "solve", str(source), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
    assert "pool 2 fork" in done.stderr.splitlines()
    forked = json.loads(out.read_text(encoding="utf-8"))
    assert forked["solver"]["method"].endswith("solved in 2 parallel processes")
    here = solve(validate_instance(data, data["name"]))
    assert forked["cost_per_month"] == pytest.approx(here.cost_per_month, rel=1e-3)
