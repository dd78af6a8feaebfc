"""Workload programs handed to the workers before the whole program is built
(solver.decompose.workload_parts.start_by_workload): each worker bounds its pools by dominance on
its own program, which must give the bounds the whole program gives, and the plan must be
the plan of the serial decomposition."""

import pytest

import solver.decompose.parallel as parallel
import solver.decompose.workload_parts as workload_parts
from solver.candidates.replica_dominance import dominance
from solver.candidates.table import build_candidates
from solver.decompose.join_run import JoinRun
from solver.program.build import build_program
from solver.settings import SolveSettings, machine_threads
from solver.solve import solve
from tests.synthetic import generated, with_policy

two_cores = pytest.mark.skipif(machine_threads() < 2, reason="needs two cores for two workers")


@pytest.mark.parametrize("seed", [7, 11])
def test_dominance_pool_by_pool_is_the_whole_programs(seed):
    """Dominance compares pools of one workload, region and GPU type only, so the union
    over the workload programs of their bounds and size rows is the whole program's.
    (With the TPOT-limited pools credited their pooling and no region lost, seeds 7 and
    11 of 2 regions x 3 workloads x 6 GPU types have size rows to encode: 11 bounds and
    2 sizes each, in ~0.1 s of CPU; with a region lost, no seed of 0-15 at 6 x 6 x 6 has
    since the ladder holds every power of two, solver.candidates.pools.pool_ladder.)"""
    inst = with_policy(generated(2, 3, 6, survive="none", seed=seed), credit_tpot_pooling=True)
    program = build_program(inst, build_candidates(inst, SolveSettings.of(inst)))
    whole = dominance(program)
    bounds, sizes = {}, []
    for w in program.sets.workloads:
        part = dominance(workload_parts.workload_program(program, w))
        bounds.update(part.bounds)
        sizes += part.sizes
    assert whole.bounds  # the case has pools to bound, and sizes to encode
    assert whole.sizes
    assert bounds == whole.bounds
    key = lambda s: (s.pool.workload, s.pool.candidate.key, s.pool.region)  # noqa: E731
    assert sorted((key(s), s.low, s.high) for s in sizes) == sorted(
        (key(s), s.low, s.high) for s in whole.sizes
    )


@two_cores
def test_parts_started_early_give_the_serial_plan(monkeypatch):
    """Four workloads on two GPU types in two regions (six types took three times as long
    to solve twice, for the same parts handed to two processes; 4 regions x 6 workloads
    took 0.94 s of CPU a serial solve, 2 x 4 takes 0.12 s)."""
    inst = generated(2, 4, 2)
    settings = SolveSettings.of(inst, time_limit_s=120)
    monkeypatch.setattr(parallel, "idle_cores", lambda: 1.0)
    serial = solve(inst, settings)
    starts, taken, joined = [], [], []
    real = workload_parts.start_by_workload

    def spy(*args):
        parts = real(*args)
        starts.append(parts)
        if parts is not None:  # count the workers' results the join takes
            results = parts.started.results

            def counted(*a, **k):
                for index, result in results(*a, **k):
                    taken.append(index)
                    yield index, result

            parts.started.results = counted
        return parts

    real_solve = JoinRun.solve

    def join_solve(run, parts, *args, **kwargs):
        joined.append(sorted(parts))
        return real_solve(run, parts, *args, **kwargs)

    monkeypatch.setattr(parallel, "idle_cores", lambda: 2.0)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_INTEGERS", 0)
    monkeypatch.setattr("solver.solve.start_by_workload", spy)
    monkeypatch.setattr(JoinRun, "solve", join_solve)
    early = solve(inst, settings)
    assert starts and starts[0] is not None and len(starts[0].parts) == 4
    # the join's first round is the four results the workers started early, each taken
    # once, and the join does not solve those four parts again itself (the method string
    # reads the same either way: the join's own round runs in two processes too)
    assert sorted(taken) == list(range(4))
    assert sorted(starts[0].parts) not in joined
    assert early.solver.method.endswith("solved in 2 parallel processes")
    assert "parallel" not in serial.solver.method
    assert early.cost_per_month == pytest.approx(serial.cost_per_month, rel=settings.mip_gap)
    assert early.solver.mip_gap <= settings.mip_gap


def test_no_early_start_with_colocation_or_one_workload():
    """Co-located workloads are coupled by their templates (parts are known only once
    the groups are), and one workload is not decomposed."""
    inst = generated(4, 6, 6)
    sets = build_program(inst, build_candidates(inst, SolveSettings.of(inst))).sets
    settings = SolveSettings.of(inst)
    from solver.backends import get_backend

    backend = get_backend("highs")
    shared = with_policy(inst, colocation=True)
    assert (
        workload_parts.start_by_workload(build_program(shared, sets.table).sets, backend, settings)
        is None
    )
    one = inst.model_copy(update={"workloads": inst.workloads[:1]})
    assert (
        workload_parts.start_by_workload(
            build_program(one, build_candidates(one, settings)).sets, backend, settings
        )
        is None
    )


def test_highs_prepares_numpy_only_for_a_program_too_large_for_mps_text():
    """`prepare` loads numpy ahead for a program past SMALL_PROGRAM_NONZEROS (it will go
    to HiGHS as arrays) and leaves it unloaded for a small one (MPS text needs none)."""
    code = """
import sys
from solver.backends import get_backend
from solver.backends.highs import SMALL_PROGRAM_NONZEROS
from solver.program.lp import LinearProgram, Sense

def program(rows):
    lp = LinearProgram("p")
    x = lp.add_variable("x", upper=10)
    y = lp.add_variable("y", upper=10)
    for i in range(rows):
        lp.add_constraint(f"r{i}", "row", {x: 1.0, y: 1.0}, Sense.LE, 5.0)
    return lp

highs = get_backend("highs")
highs.prepare(program(10))  # 20 coefficients
assert "numpy" not in sys.modules
highs.prepare(program(SMALL_PROGRAM_NONZEROS // 2 + 1))  # 2 per row: one past the limit
assert "numpy" in sys.modules
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
