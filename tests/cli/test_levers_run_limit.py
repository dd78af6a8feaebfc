"""`explain --levers` under the run's flags: the levers of an hourly plan each get the
run's time limit (`--time-limit`), not the file's `solver.time_limit_s` (the scale sweep,
tests/bench/scale_sweep.py: an hourly 3-region instance whose file says 300 s, run with
`--time-limit 5`, had its 24 levers each given 300 s: killed at 220 s), and solve to the
run's `--mip-gap`."""

from typing import ClassVar

import cli.levers
from models.io.overrides import load_instance_with, parse_overrides
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.paths import INSTANCES


class _Recorded:
    """Stands in for LeverRun: keeps the instance it was given and begins nothing."""

    given: ClassVar[list] = []

    def __init__(self, instance, *args, **kwargs):
        self.given.append(instance)

    def begin(self, beside=False):
        return self

    def close(self, cancel=False):
        pass


def test_an_hourly_plans_levers_get_the_runs_limit_and_gap(monkeypatch):
    """diurnal-chat-batch at TP8 alone (an hourly plan in 0.4 s of CPU; its file: 60 s
    and a 0.1% gap) solved as `--time-limit 7 --mip-gap 0.02` gives it: each lever
    (no shared deadline in an hourly plan) is solved within 7 s to a 2% gap."""
    monkeypatch.setattr(cli.levers, "LeverRun", _Recorded)
    tp8 = parse_overrides(["policy.tensor_parallel=[8]"])
    hourly = load_instance_with(INSTANCES / "diurnal-chat-batch.yaml", tp8)
    assert (hourly.solver.time_limit_s, hourly.solver.mip_gap) == (60, 0.001)
    settings = SolveSettings.of(hourly, threads=1, time_limit_s=7.0, mip_gap=0.02)
    solved = solve_program(hourly, settings)
    assert not cli.levers.runs_deadline(solved)  # each lever its own limit
    running = cli.levers.RunningLevers(solved, None, jobs=1)
    running.progress.stop()
    (given,) = _Recorded.given
    assert (given.solver.time_limit_s, given.solver.mip_gap) == (7.0, 0.02)
    assert given.workloads == hourly.workloads and given.policy == hourly.policy
