"""The simulator on the default instance's plan: its speed (an hour of traffic) and, per
pool, the simulated p99 TTFT and TPOT beside the planner's analytic promise.

Prints the table; asserts only that every loaded pool was simulated (the numbers are
the measurement, not a pass/fail line: no wall-clock assertion)."""

import time

from models.io.loading import load_instance
from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests.paths import DEFAULT_INSTANCE

HOUR_S = 3600.0


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:8.1f}"


def test_an_hour_of_the_default_plan():
    instance = load_instance(DEFAULT_INSTANCE)
    plan = solve(instance)
    started = time.process_time()
    result = simulate_plan(instance, plan, duration_s=HOUR_S, seed=0)
    cpu_s = time.process_time() - started
    print()
    print(f"{result.events:,} events, {cpu_s:.1f} s of CPU for {HOUR_S:g} s of arrivals")
    print(
        f"{'pool':44} {'req/s':>7} | {'TTFT p99':>8} {'analytic':>8} | "
        f"{'TPOT p99':>8} {'analytic':>8} | SLO"
    )
    for pool in result.pools:
        sim, ana = pool.simulated, pool.analytic
        name = f"{pool.region} {pool.replicas} x {pool.gpu} tp{pool.tp}xpp{pool.pp} {pool.role}"
        ttft = (sim.ttft_p99_ms if sim else None, ana.ttft_p99_ms if ana else None)
        tpot = (sim.tpot_p99_ms if sim else None, ana.tpot_p99_ms if ana else None)
        print(
            f"{name:44} {pool.load_requests_per_s:7.2f} | {_ms(ttft[0]):>8} {_ms(ttft[1]):>8} | "
            f"{_ms(tpot[0]):>8} {_ms(tpot[1]):>8} | {pool.meets_slo}"
        )
    loaded = [pool for pool in result.pools if pool.load_requests_per_s > 0]
    assert all(pool.simulated is not None for pool in loaded)
