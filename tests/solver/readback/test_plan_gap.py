"""The gap a static plan states is its own, not that of an incumbent that bought more
GPUs than its pools use (solver.readback.gap)."""

from dataclasses import replace

import pytest

from models.io.loading import load_instance
from models.operations.site import node_gpus
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import Termination
from solver.readback.gap import plan_gap
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.paths import INSTANCES


@pytest.fixture(scope="module")
def solved():
    instance = load_instance(INSTANCES / "region-loss-3.yaml")
    return solve_program(instance, SolveSettings.of(instance, threads=1))


def test_an_incumbent_with_an_idle_server_states_the_gap_of_the_plan_read_back(solved):
    program, result, plan = solved.program, solved.result, solved.plan
    assert plan.optimal and plan.gpus
    use = next(u for u in plan.gpus if u.purchased)
    n = node_gpus(program.sets.instance, use.gpu)
    bought = PurchasedColumn(use.region, use.gpu).name()
    servers = ServersColumn(use.region, use.gpu).name()
    extra = program.lp.objective[bought] * n + program.lp.objective.get(servers, 0.0)
    values = dict(result.values)
    values[bought] += n  # one more server, used by no pool
    values[servers] = values.get(servers, 0.0) + 1
    # the incumbent's objective is the optimum plus that server; its bound 90% of the
    # optimum: the solver states 1 - 0.9 x opt / (opt + extra), the plan (which buys
    # what its pools use) (opt - 0.9 x opt) / opt = 10%
    opt = result.objective
    stopped = replace(
        result,
        termination=Termination.FEASIBLE,
        objective=opt + extra,
        mip_gap=1.0 - 0.9 * opt / (opt + extra),
    )
    assert stopped.bound == pytest.approx(0.9 * opt)
    gap = plan_gap(program.lp, program.sets, stopped, values, plan.gpus)
    assert gap == pytest.approx(0.1)
    assert gap < stopped.mip_gap


def test_a_plan_that_buys_what_it_uses_keeps_the_solvers_gap(solved):
    program, result, plan = solved.program, solved.result, solved.plan
    stopped = replace(result, termination=Termination.FEASIBLE, mip_gap=0.05)
    gap = plan_gap(program.lp, program.sets, stopped, dict(result.values), plan.gpus)
    assert gap == 0.05
    assert plan_gap(program.lp, program.sets, replace(result, mip_gap=None), {}, ()) is None
