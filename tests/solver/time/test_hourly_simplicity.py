"""What the limit on configurations per pool costs an hourly plan: `explain` re-solves
its periods program with the configs_per_pool rows of every period and the day's
configs_per_day rows dropped
(solver.time.alternatives, solver.time.alternatives.resolve_lifted).

Hand case: one region, one workload of an 8B model KV-bound on H100 ($2.0/GPU-hour,
q_X requests/s a replica) and H200 ($2.6, q_Y = 1.135 q_X), one GPU a replica, rented
by the GPU, no reserved price (so each hour is paid on its own). The day is
tests/solver/time/test_hourly_explain.py's: the warm load of UTC hour h is the peak x
LEVEL_BY_HOUR[h] (0.5, 0.75 on the shoulders, 1). In H100 units, a load L costs per
hour, with at most one configuration (K = 1) in that hour,

    single(L) = min(2.0 ceil(L), 2.6 ceil(L q_X / q_Y))

and with any mix of k H200 and the H100 that carry the rest,

    mix(L) = min over k of 2.6 k + 2.0 ceil(L - k q_Y / q_X)

At a peak of 7.1: single = 2.0 x 8 = 16.0 and mix = 2.6 + 2.0 x ceil(7.1 - 1.135) =
2.6 + 12 = 14.6 $/hour. The limit holds over the whole day (configs_per_day: one
server image all day), so with D = 730 / 24 days a month the plan costs

    day = D x min(sum_h 2.0 ceil(L_h), sum_h 2.6 ceil(L_h q_X / q_Y))

(at least D x sum_h single(L_h), what one configuration an hour would cost), the lifted
program D x sum_h mix(L_h), and the plan reports the difference.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cli.solve
from models.io.loading import validate_instance
from solver.analysis import explain as explain_module
from solver.analysis.explain import explain_solved
from solver.solve import SolveSettings, solve_program
from solver.time.alternatives import configs_limit_rows, resolve_lifted, without_configs_limit
from tests.solver.time.test_hour_prices import _lone_rps
from tests.solver.time.test_hourly_explain import LEVEL_BY_HOUR, PROFILE

PRICES = {"h100-sxm": 2.0, "h200": 2.6}
HOURS_PER_MONTH = 730.0
DAYS = HOURS_PER_MONTH / 24
PEAK_IN_H100 = 7.1


def _instance(peak_in_h100: float = PEAK_IN_H100, limit: int | None = 1):
    supply = {g: {"max_gpus": 128, "price_per_gpu_hour": p} for g, p in PRICES.items()}
    data = {
        "name": "hourly-simplicity",
        "gpus": [{"name": g} for g in PRICES],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": "east", "supply": supply}],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    "east": {
                        "peak_requests_per_s": peak_in_h100 * _lone_rps("h100-sxm"),
                        "hourly_profile": PROFILE,
                    }
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 10000.0, "tpot_p99_ms": 200.0},
            }
        ],
        "policy": {
            "buy_unit": "gpu",
            "max_configs_per_pool": limit,
            "tensor_parallel": [1],
            "replica_start_s": 0.0,
            "scale_detection_s": 0.0,
            "hours_per_month": HOURS_PER_MONTH,
        },
    }
    return validate_instance(data, "hourly-simplicity.yaml")


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-9)


def _single(load: float) -> float:
    ratio = _lone_rps("h200") / _lone_rps("h100-sxm")
    return min(PRICES["h100-sxm"] * _ceil(load), PRICES["h200"] * _ceil(load / ratio))


def _day(loads: list[float]) -> float:
    """One configuration all day: the cheaper of H100 and H200 over the day's hours."""
    ratio = _lone_rps("h200") / _lone_rps("h100-sxm")
    return min(
        sum(PRICES["h100-sxm"] * _ceil(load) for load in loads),
        sum(PRICES["h200"] * _ceil(load / ratio) for load in loads),
    )


def _mix(load: float) -> float:
    ratio = _lone_rps("h200") / _lone_rps("h100-sxm")
    return min(
        PRICES["h200"] * k + PRICES["h100-sxm"] * _ceil(max(load - k * ratio, 0.0))
        for k in range(_ceil(load / ratio) + 1)
    )


@pytest.fixture(scope="module")
def explained():
    """(solved, explanation) of the hand case at gap 0, as `explain --mip-gap 0` makes them
    (`explain` is `explain_solved(solve_program(...))`), once a module, without the
    engine-effects replay (most of its time; no test here reads it), and the hand figures
    and the command's outputs read the same one (an hourly Solved holds its held-fleet
    thread, so it cannot be pickled for the other pytest-xdist worker, as
    tests.solved_once shares plans)."""
    instance = _instance()
    solved = solve_program(instance, SolveSettings.of(instance, mip_gap=0.0))
    with pytest.MonkeyPatch.context() as patch:  # no test here reads the replays
        patch.setattr(explain_module, "_engine_effects", lambda *_: {})
        return solved, explain_solved(solved)


def _lend(monkeypatch, solved, explanation) -> list[str]:
    """While the test runs, the calls `explain` makes to solve (cli.solve's solve_program)
    and to explain (solver.analysis.explain.explain_solved) return `solved` and
    `explanation` where they are the calls those are the results of: the same instance at
    the same settings (SolveSettings compares everything but the deadline), then that
    solve. Any other call runs. The list returned names the calls lent, in order."""
    real_solve, real_explain = cli.solve.solve_program, explain_module.explain_solved
    settings_of_it, lent = SolveSettings.of(solved.instance, mip_gap=0.0), []

    def solve(asked, settings=None, table=None):
        if table is None and settings == settings_of_it and asked == solved.instance:
            lent.append("solve")
            return solved
        return real_solve(asked, settings, table)

    def explain_it(asked, *args, **kwargs):
        if asked is solved:
            lent.append("explain")
            return explanation
        return real_explain(asked, *args, **kwargs)

    monkeypatch.setattr(cli.solve, "solve_program", solve)
    monkeypatch.setattr(explain_module, "explain_solved", explain_it)
    return lent


def test_the_limit_costs_the_mix_it_forbids_by_hand(explained):
    assert _single(PEAK_IN_H100) == pytest.approx(16.0)
    assert _mix(PEAK_IN_H100) == pytest.approx(14.6)
    loads = [PEAK_IN_H100 * level for level in LEVEL_BY_HOUR]
    base = DAYS * _day(loads)
    assert base >= DAYS * sum(_single(load) for load in loads) - 1e-9  # hour by hour: cheaper
    lifted = DAYS * sum(_mix(load) for load in loads)
    _, explained = explained
    plan = explained.plan
    assert plan.hours and explained.status == "optimal"
    assert plan.cost_per_month == pytest.approx(base, abs=0.01)
    simple = plan.simplicity
    assert simple is not None and simple.max_configs_per_pool == 1
    assert simple.row == "configs_per_day"
    assert simple.cost_per_month_unlimited == pytest.approx(lifted, abs=0.01)
    assert simple.extra_cost_per_month == pytest.approx(base - lifted, abs=0.01)
    assert simple.extra_cost_per_month == plan.cost_per_month - simple.cost_per_month_unlimited
    assert simple.configurations_unlimited == 2  # H100 and H200 side by side at the peak


def test_the_simplicity_line_is_in_every_output(run_cli, tmp_path, explained, monkeypatch):
    """The terminal, JSON and Markdown of `explain` carry the hourly figure as the static
    one (cli.render.plan_tables.procurement_lines). The command's solve and explanation
    are the module's (`_lend`: the instance read back from its file, at gap 0); its
    reading, rendering and files are its own."""
    solved, explanation = explained
    lent = _lend(monkeypatch, solved, explanation)
    simple = explanation.plan.simplicity
    line = (
        f"simplicity: at most 1 configuration per pool all day (configs_per_day) costs "
        f"${simple.extra_cost_per_month:,.0f}/month over the unlimited plan"
    )
    instance = tmp_path / "hourly.json"
    instance.write_text(_instance().model_dump_json(exclude_unset=True))
    markdown, data = tmp_path / "explain.md", tmp_path / "explain.json"
    result = run_cli("explain", instance, "--mip-gap", "0", "--markdown", markdown, "--json", data)
    assert result.exit_code == 0, result.stderr
    assert line in result.stdout.replace("\n", " ") or line in result.stdout
    assert line in markdown.read_text()
    assert f'"extra_cost_per_month": {simple.extra_cost_per_month}' in data.read_text()
    assert lent == ["solve", "explain"]  # the module's, not a second replay


@settings(max_examples=6, deadline=None)
@given(st.floats(1.0, 9.0))
def test_the_lifted_program_is_never_dearer(peak_in_h100):
    """Property: dropping the configs_per_pool rows only relaxes the periods program, so
    its optimum is at most the plan's, and the figure is their difference."""
    instance = _instance(peak_in_h100)
    solved = solve_program(instance, SolveSettings.of(instance, mip_gap=0.0))
    program = solved.time_step.program
    assert configs_limit_rows(program)  # two candidates per phase, K = 1: a row each period
    assert not configs_limit_rows(without_configs_limit(program))
    exact = SolveSettings.of(instance, mip_gap=0.0)
    simple = resolve_lifted(program, solved.plan, exact)
    assert simple.cost_per_month_unlimited <= solved.plan.cost_per_month + 1e-6
    assert simple.extra_cost_per_month == pytest.approx(
        solved.plan.cost_per_month - simple.cost_per_month_unlimited
    )


def test_no_limit_no_figure():
    instance = _instance(limit=None)
    solved = solve_program(instance, SolveSettings.of(instance, mip_gap=0.0))
    assert not configs_limit_rows(solved.time_step.program)
    assert resolve_lifted(solved.time_step.program, solved.plan, solved.settings) is None


def test_lifting_the_limit_never_reads_dearer_than_the_plan():
    """Every plan within the limit is one without it, so the lifted program's optimum is
    at most the plan's cost. A re-solve stopped within its 1% comparison gap on a dearer
    plan read so: an 8B chat on a 1-to-4 day in two regions (a power cap, reserved
    prices, buy_unit gpu) at $17,574.75 read 'at most 1 configuration per pool costs
    $-79/month over the unlimited plan ($17,654/month, 3 pools)'. It reads the plan itself
    now, extra $0; a cheaper lifted plan ($17,556.50 solved to gap 0) reads what it saves,
    17,574.75 - 17,556.50 = $18.25."""
    from solver.plan.records import SimplicityCost

    dearer = SimplicityCost.against(1, 17_574.75, 2, 17_654.0, 3)
    assert dearer.cost_per_month_unlimited == 17_574.75
    assert dearer.extra_cost_per_month == 0.0 and dearer.configurations_unlimited == 2
    cheaper = SimplicityCost.against(1, 17_574.75, 2, 17_556.5, 3)
    assert cheaper.extra_cost_per_month == pytest.approx(17_574.75 - 17_556.5)
    assert cheaper.configurations_unlimited == 3
