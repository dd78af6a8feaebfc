"""A replay too short to measure a request of a loaded pool says how long it must run
(hostile10): `simulate --duration-s 0.001` on a 20 requests/s pool printed a table of
'-', no verdict and exit 0."""

import pytest

from solver.simulate.results import P99_REQUESTS, PlanSimulation, PoolSimulation
from tests.paths import DEFAULT_INSTANCE


def _run(duration_s: float, load: float, measured: int) -> PlanSimulation:
    pool = PoolSimulation(
        workload="chat", region="east", role="unified", gpu="h100-sxm", precision="fp8",
        tp=1, pp=1, replicas=1, load_requests_per_s=load, simulated=None, analytic=None,
        meets_slo=None, requests_measured=measured,
    )  # fmt: skip
    warmup_s = min(60.0, 0.1 * duration_s)
    return PlanSimulation(
        instance="i", scenario="none", duration_s=duration_s, warmup_s=warmup_s, seed=0,
        burstiness_cv=1.0, dispatch="least_prefill", pools=(pool,),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("load", "least"),
    [
        # 100 requests at 20/s take 5 s past a warm-up of 10% of the run: 5 / 0.9 = 5.556 s
        (20.0, "5.556"),
        # at 0.001/s they take 100,000 s, past 600 s the warm-up stops at 60 s: 100,060 s
        (0.001, "1.001e+05"),
    ],
)
def test_the_least_run_that_measures_a_p99(load, least):
    assert P99_REQUESTS == 100
    message = _run(0.001, load, 0).unmeasured()
    assert message is not None and f"give --duration-s {least} or more" in message


def test_a_pool_measured_or_unloaded_needs_nothing_more():
    assert _run(600.0, 20.0, 11_000).unmeasured() is None
    assert _run(0.001, 0.0, 0).unmeasured() is None  # no load in the scenario: no verdict


def test_simulate_of_a_run_too_short_exits_2_naming_the_flag(run_cli, tmp_path, default_plan):
    plan = tmp_path / "plan.json"
    plan.write_text(default_plan.model_dump_json())
    out = tmp_path / "sim.json"
    result = run_cli("simulate", DEFAULT_INSTANCE, plan, "--duration-s", "0.001", "--json", out)
    assert result.exit_code == 2, result.stderr
    assert "--minutes/--duration-s: 0.001 s of arrivals measured no request of" in result.stderr
    assert "a p99 needs 100 requests" in result.stderr and not out.exists()
