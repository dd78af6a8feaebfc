"""The simulator's closed-loop client (solver.simulate.traffic.closed_loop_trace): users
that send their next request when the last completes, set against `perf --concurrency C
--arrivals burst` (models.serving.latency), and `simulate --arrivals`."""

import inspect
import json
import typing

import numpy as np
import pytest

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.latency import latency_at_concurrency_burst
from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.simulate.disaggregated import replica_engine
from solver.simulate.traffic import closed_loop_trace

BURST_AGREEMENT = 0.01
"""Mean TTFT and TPOT of the simulator's burst against perf's replay of the same client:
both run the step model iteration by iteration, perf at the mix's mean context and with
the batch ceiling as its seats, the simulator at each sequence's own context with the KV
cache's token count; measured within 0.1% on 8B and 70B, 1,000-4,000-token prompts,
1-256 users, wherever the simulator does not preempt (8B at 256 users with 2,000- and
4,000-token prompts fills its KV cache and preempts: 4-12% apart, not asserted)."""


def _serving(model, tp, precision, prompt, output):
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm(model)
    config = ReplicaConfig(gpu, llm, precision, precision, tp, 1)
    return ServingContext(config, TrafficMix.fixed(prompt, output), efficiency_for(gpu, precision))


def _burst(serving, users, prompt, output, requests=10):
    total = users * requests
    return closed_loop_trace(
        replica_engine(serving),
        1,
        np.zeros(users),
        requests,
        np.full(total, prompt),
        np.full(total, output),
    )


@pytest.mark.parametrize(
    ("model", "tp", "precision", "prompt", "output", "users"),
    [
        ("llama-3.1-8b", 1, Precision.BF16, 1000, 100, 16),
        ("llama-3.1-8b", 1, Precision.BF16, 1000, 100, 64),
        ("llama-3.3-70b", 4, Precision.FP8, 4000, 300, 64),
    ],
)
def test_the_simulators_burst_agrees_with_perf(model, tp, precision, prompt, output, users):
    serving = _serving(model, tp, precision, prompt, output)
    perf = latency_at_concurrency_burst(serving, users)
    trace = _burst(serving, users, prompt, output)
    assert trace.preemptions == 0
    assert np.mean(trace.ttft_s) == pytest.approx(perf.ttft_mean_s, rel=BURST_AGREEMENT)
    assert np.mean(trace.tpot_s) == pytest.approx(perf.tpot_mean_s, rel=BURST_AGREEMENT)
    throughput = users * 10 / trace.end_s
    assert throughput == pytest.approx(perf.throughput_requests_per_s, rel=BURST_AGREEMENT)


def test_a_lone_user_by_hand():
    """One user, three requests of a 1,000-token prompt and 50 output tokens on an idle
    replica: each TTFT is one prefill iteration with nothing decoding, t(0, 1000) with the
    prompt's tokens attending to 500 on average; each request is sent the instant the
    last one finished, so the run is three times (TTFT + 49 decode iterations)."""
    serving = _serving("llama-3.1-8b", 1, Precision.BF16, 1000, 50)
    trace = _burst(serving, 1, 1000, 50, requests=3)
    steps = replica_step_model(serving.config, serving.efficiency)
    prefill_s = steps.iteration_s(0, 0.0, 1000, 500.0)
    assert trace.ttft_s == pytest.approx([prefill_s] * 3)
    assert trace.arrival_s[1:] == pytest.approx(trace.finish_s[:-1])
    assert trace.end_s == pytest.approx(trace.finish_s[-1])


def test_never_more_than_the_users_in_flight():
    """A closed loop holds at most C requests at any instant, and every one finishes."""
    serving = _serving("llama-3.1-8b", 1, Precision.BF16, 500, 40)
    users, requests = 12, 5
    total = users * requests
    rng = np.random.default_rng(3)
    trace = closed_loop_trace(
        replica_engine(serving, 2),
        2,
        rng.uniform(0, 0.5, users),
        requests,
        rng.integers(50, 1500, total),
        rng.integers(2, 80, total),
    )
    assert not np.isnan(trace.finish_s).any()
    for at_s in trace.arrival_s:
        in_flight = (trace.arrival_s <= at_s) & (trace.finish_s > at_s)
        assert in_flight.sum() <= users


@pytest.fixture(scope="module")
def unified_plan(tmp_path_factory):
    from models.io.loading import load_instance
    from solver.solve import solve

    plan = solve(load_instance("instances/unified.yaml"))
    path = tmp_path_factory.mktemp("closed") / "plan.json"
    path.write_text(plan.model_dump_json())
    return path


def test_simulate_replays_the_tools_burst(run_cli, unified_plan, tmp_path):
    out = tmp_path / "sim.json"
    result = run_cli(
        "simulate", "instances/unified.yaml", unified_plan, "--arrivals", "burst",
        "--concurrency", "8", "--json", out,
    )  # fmt: skip
    assert "closed loop, burst, 8 users per replica" in result.stdout
    assert "perf --concurrency 8 --arrivals burst" in result.stdout
    data = json.loads(out.read_text())
    assert data["arrivals"] == "burst" and data["concurrency"] == 8
    pool = data["pools"][0]
    assert pool["requests_measured"] == 8 * pool["replicas"] * 10
    # the verdict is the p99 as the tools print it against the target; exit 1 on a miss
    misses = pool["simulated"]["ttft_p99_ms"] > pool["ttft_p99_target_ms"] or (
        pool["simulated"]["tpot_p99_ms"] > pool["tpot_p99_target_ms"]
    )
    assert pool["meets_slo"] is not misses
    assert result.exit_code == (1 if misses else 0), result.stderr


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--arrivals", "burst"), "--concurrency"),
        (("--concurrency", "8"), "--concurrency"),
        (("--arrivals", "burst", "--concurrency", "8", "--effects"), "--effects"),
        (("--arrivals", "poisson"), "--arrivals"),
        (("--arrivals", "burst", "--concurrency", "0"), "--concurrency"),
        # hostile10: a closed loop replays users x 10 requests at no rate and for no
        # time; these changed nothing but the JSON's duration_s and burstiness_cv
        (("--arrivals", "burst", "--concurrency", "8", "--duration-s", "60"), "--duration-s"),
        (("--arrivals", "staggered", "--concurrency", "8", "--minutes", "1"), "--minutes"),
        (("--arrivals", "staggered", "--concurrency", "8", "--burstiness", "2"), "--burstiness"),
        (("--arrivals", "burst", "--concurrency", "8", "--seed", "7"), "--seed"),  # fixed lengths
    ],
)
def test_bad_closed_loops_exit_2(run_cli, unified_plan, args, flag):
    result = run_cli("simulate", "instances/unified.yaml", unified_plan, *args)
    assert result.exit_code == 2
    assert flag in result.stderr


def test_the_help_names_the_default_and_why():
    """--arrivals's help (the text `simulate --help` prints) says open is the default and
    why: the traffic a service sees, which the plan is sized for."""
    from cli.simulate import simulate

    option = typing.get_type_hints(simulate, include_extras=True)["arrivals"].__metadata__[0]
    assert "open (default)" in option.help
    assert "the plan is sized for" in option.help
    assert inspect.signature(simulate).parameters["arrivals"].default == "open"


PAIR_AGREEMENT = {"ttft": 0.05, "tpot": 0.01, "throughput": 0.01}
"""The simulator's pair under the closed loop against perf's pair burst
(models.serving.disaggregated.replay_pair): the same client, two implementations (the
simulator admits by KV tokens, prices each iteration at its own contexts, and its
prefill lanes are the engine's). Measured on 20 cases (8B and 70B on H100, 1,000/100 and
4,000/300 tokens, 1-4 prefill and 1-2 decode workers, 8-128 users): TTFT within 1.8%,
TPOT 0.6%, throughput 0.5%. The mean TTFT of users in lock-step (fixed lengths, all
starting together) is chaotic in the step time, in both implementations alike: the 70B
pair below, its step overhead moved by 0.1-0.3% (1.880 to 1.895 ms), reads perf 0.614 to
0.640 s and the simulator 0.616 to 0.626 s, their ratio 0.966 to 1.018 (stop 21's refit
moved it from inside 3% to 3.4%); so TTFT is held to 5%, the width of that jitter."""


@pytest.mark.parametrize(
    ("model", "tp", "precision", "prompt", "output", "prefill", "decode", "users"),
    [
        ("llama-3.1-8b", 1, Precision.BF16, 1000, 100, 2, 1, 32),
        ("llama-3.3-70b", 4, Precision.FP8, 4000, 300, 3, 2, 64),
    ],
)
def test_the_simulators_pair_agrees_with_perfs_pair(
    model, tp, precision, prompt, output, prefill, decode, users
):
    from models.serving.disaggregated import PairLayout, pair_at_concurrency
    from models.serving.replica import Role
    from solver.simulate.disaggregated import prefill_lanes
    from solver.simulate.traffic import closed_loop_pair_trace

    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm(model)
    efficiency = efficiency_for(gpu, precision)
    mix = TrafficMix.fixed(prompt, output)

    def side(role):
        config = ReplicaConfig(gpu, llm, precision, precision, tp, 1, role)
        return ServingContext(config, mix, efficiency)

    layout = PairLayout(side(Role.PREFILL), side(Role.DECODE), prefill, decode)
    perf = pair_at_concurrency(layout, users)
    engine, lanes = prefill_lanes(layout.prefill, prefill)
    total = users * 10
    run = closed_loop_pair_trace(
        engine,
        lanes,
        replica_engine(layout.decode, decode),
        decode,
        np.zeros(users),
        10,
        np.full(total, prompt),
        np.full(total, output),
        np.full(total, perf.kv_transfer_s),
    )
    point = perf.point
    assert run["preemptions"] == 0
    assert np.mean(run["ttft_s"]) == pytest.approx(point.ttft_mean_s, rel=PAIR_AGREEMENT["ttft"])
    assert np.mean(run["tpot_s"]) == pytest.approx(point.tpot_mean_s, rel=PAIR_AGREEMENT["tpot"])
    assert total / run["end_s"] == pytest.approx(
        point.throughput_requests_per_s, rel=PAIR_AGREEMENT["throughput"]
    )


def test_simulate_replays_a_disaggregated_pair_in_closed_loop(run_cli, tmp_path):
    """The disaggregated instance's pair under 16 users per decode replica: a TTFT row
    for the prefill pool and a TPOT row for the decode pool, perf's pair in the note."""
    from models.io.loading import load_instance
    from solver.solve import solve

    plan = tmp_path / "plan.json"
    plan.write_text(solve(load_instance("instances/disaggregated.yaml")).model_dump_json())
    out = tmp_path / "sim.json"
    result = run_cli(
        "simulate", "instances/disaggregated.yaml", plan, "--arrivals", "burst",
        "--concurrency", "16", "--json", out,
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    assert "perf --prefill-workers" in result.stdout
    rows = json.loads(out.read_text())["pools"]
    assert [row["role"] for row in rows] == ["prefill", "decode"]
    assert rows[0]["simulated"]["ttft_p99_ms"] is not None
    assert rows[1]["simulated"]["tpot_p99_ms"] is not None
    assert rows[0]["requests_measured"] == 16 * rows[1]["replicas"] * 10
