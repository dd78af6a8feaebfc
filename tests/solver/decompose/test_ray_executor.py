"""`SolveSettings.executor: ray` (issue 33): the workload, scenario and period subproblems
of a solve as Ray tasks (solver.decompose.parallel), and `solve --executor ray`.

The Ray tests run on a local Ray instance of one CPU and skip, saying why, where Ray is
not installed (it is the optional `ray` extra; `make test` does not install it). The
settings and the command line's refusal run everywhere."""

import importlib.util
from pathlib import Path

import pytest
import yaml

from solver.decompose import parallel
from solver.settings import SolveSettings
from solver.solve import solve
from tests.synthetic import generated, generated_data

ROOT = str(Path(__file__).resolve().parents[3])
HAS_RAY = importlib.util.find_spec("ray") is not None
NO_RAY = "ray is not installed (pip install 'fleetplan[ray]'): the Ray executor is not run"


def test_an_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="executor must be one of local, ray"):
        SolveSettings(executor="spark")


def test_the_executor_defaults_to_local():
    inst = generated(2, 2, 1)
    assert SolveSettings.of(inst).executor == "local"
    assert SolveSettings.of(inst, executor="ray").executor == "ray"


def test_executor_ray_without_ray_exits_2_naming_the_flag(run_cli, tmp_path, monkeypatch):
    data = generated_data(2, 2, 1)
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    result = run_cli("solve", path, "--executor", "ray")
    assert result.exit_code == 2
    assert "--executor" in result.stderr and "ray is not installed" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def local_ray():
    if not HAS_RAY:
        pytest.skip(NO_RAY)
    import ray

    # its tasks import the planner from this checkout, as the driver does
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": ROOT}},
    )
    yield ray
    ray.shutdown()


def test_a_solve_on_ray_runs_its_parts_as_ray_tasks_and_plans_the_same(local_ray, monkeypatch):
    """Three workloads, each a program of its own (decomposed by workload): on Ray each
    part is a Ray task, and the plan costs what the local solve's does."""
    inst = generated(2, 3, 2)
    ran: list[int] = []
    on_ray = parallel._solve_on_ray

    def counted(*args):
        for index, result in on_ray(*args):
            ran.append(index)
            yield index, result

    monkeypatch.setattr(parallel, "_solve_on_ray", counted)
    local = solve(inst, SolveSettings.of(inst))
    assert not ran  # the local executor never asks Ray
    remote = solve(inst, SolveSettings.of(inst, executor="ray"))
    assert "decomposed by workload: 3" in remote.solver.method
    assert sorted(ran) == [0, 1, 2]
    assert remote.cost_per_month == pytest.approx(local.cost_per_month, rel=1e-3)
