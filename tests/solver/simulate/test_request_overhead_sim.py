"""The simulator and the planner agree on the engine profile's request overhead o
(`Efficiency.request_overhead_s`): a request reaches the engine o after it arrives, so
an open-loop replay's every TTFT moves by exactly o (a stream shifted by a constant
queues as the unshifted one) and the planner's promise moves by the same o; a
closed-loop user's next request is sent at completion and reaches the engine o later,
as in perf's burst replay."""

import numpy as np
import pytest

from models.io.loading import load_instance
from models.physics import catalog
from models.physics.efficiency import EfficiencyOverrides, efficiency_for
from models.physics.precision import Precision
from models.serving.latency import latency_at_concurrency_burst
from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.simulate.disaggregated import replica_engine
from solver.simulate.engine import simulate_pool
from solver.simulate.replay import simulate_plan
from solver.simulate.traffic import arrival_times_s, closed_loop_trace

OVERHEAD_S = 0.080
GPU, LLM = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
CONFIG = ReplicaConfig(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1)
BARE = efficiency_for(GPU, Precision.BF16)
WITH = BARE.model_copy(update={"request_overhead_s": OVERHEAD_S})


def _serving(efficiency, prompt: int = 1000, output: int = 100) -> ServingContext:
    return ServingContext(CONFIG, TrafficMix.fixed(prompt, output), efficiency)


def test_an_open_loop_replay_moves_every_ttft_by_the_overhead():
    """Poisson arrivals at 20 requests/s on two replicas: each request's TTFT with o is
    its TTFT without plus o, and its TPOT and the preemptions are the same."""
    rng = np.random.default_rng(7)
    arrivals = arrival_times_s(20.0, 60.0, 1.0, rng)
    prompts = rng.integers(200, 2000, size=arrivals.size)
    outputs = rng.integers(20, 300, size=arrivals.size)
    engine = replica_engine(_serving(BARE))
    bare = simulate_pool(engine, 2, arrivals, prompts, outputs)
    paid = simulate_pool(engine, 2, arrivals, prompts, outputs, request_overhead_s=OVERHEAD_S)
    assert paid.arrival_s == pytest.approx(bare.arrival_s)
    assert paid.ttft_s == pytest.approx(bare.ttft_s + OVERHEAD_S, abs=1e-9)
    assert paid.tpot_s == pytest.approx(bare.tpot_s, rel=1e-9)
    assert paid.preemptions == bare.preemptions


def test_a_lone_closed_loop_user_by_hand():
    """One user, three requests of 1,000 prompt and 50 output tokens: each TTFT is
    o + one prefill iteration t(0, 1000) (tokens attending to 500 on average), and each
    request is sent the instant the last finished."""
    serving = _serving(WITH, 1000, 50)
    trace = closed_loop_trace(
        replica_engine(serving),
        1,
        np.zeros(1),
        3,
        np.full(3, 1000),
        np.full(3, 50),
        request_overhead_s=OVERHEAD_S,
    )
    prefill_s = replica_step_model(CONFIG, WITH).iteration_s(0, 0.0, 1000, 500.0)
    assert trace.ttft_s == pytest.approx([OVERHEAD_S + prefill_s] * 3)
    assert trace.arrival_s[1:] == pytest.approx(trace.finish_s[:-1])


@pytest.mark.parametrize("users", [1, 16])
def test_the_simulators_burst_with_an_overhead_agrees_with_perfs(users):
    """The tools' burst with o on the simulator and in perf's replay
    (`latency_at_concurrency_burst`): mean TTFT, TPOT and throughput within 1%, as
    without o (tests/solver/simulate/test_closed_loop_client.py)."""
    serving = _serving(WITH)
    perf = latency_at_concurrency_burst(serving, users)
    total = users * 10
    trace = closed_loop_trace(
        replica_engine(serving),
        1,
        np.zeros(users),
        10,
        np.full(total, 1000),
        np.full(total, 100),
        request_overhead_s=OVERHEAD_S,
    )
    assert np.mean(trace.ttft_s) == pytest.approx(perf.ttft_mean_s, rel=0.01)
    assert np.mean(trace.tpot_s) == pytest.approx(perf.tpot_mean_s, rel=0.01)
    assert total / trace.end_s == pytest.approx(perf.throughput_requests_per_s, rel=0.01)


@pytest.fixture(scope="module")
def unified():
    from solver.solve import solve

    instance = load_instance("instances/unified.yaml")
    return instance, solve(instance)


def test_simulate_and_plan_move_by_the_same_overhead(unified):
    """The same plan replayed with and without o (the instance's `efficiency:
    request_overhead_s`): at the same load per pool, the simulated p50 and p99 TTFT and
    the planner's promise each move by o, the TPOT not at all."""
    instance, plan = unified
    paid_instance = instance.model_copy(
        update={"efficiency": EfficiencyOverrides(request_overhead_s=OVERHEAD_S)}
    )
    bare = simulate_plan(instance, plan, duration_s=120.0, seed=3)
    paid = simulate_plan(paid_instance, plan, duration_s=120.0, seed=3)
    for b, p in zip(bare.pools, paid.pools, strict=True):
        assert p.load_requests_per_s == pytest.approx(b.load_requests_per_s)
        for side in ("simulated", "analytic"):
            before, after = getattr(b, side), getattr(p, side)
            for name in ("ttft_p50_ms", "ttft_p99_ms"):
                assert getattr(after, name) == pytest.approx(
                    getattr(before, name) + OVERHEAD_S * 1e3, abs=1e-3
                ), (side, name)
            assert after.tpot_p99_ms == pytest.approx(before.tpot_p99_ms, rel=1e-9)
