"""simulate replays the batch the planner soaks into the replayed hour's pools beside the
interactive requests (solver.simulate.soak). Before, it only named it: diurnal-chat-batch
at 05:00 UTC replayed us-east's chat pool at 7.51 requests/s alone, where the plan also
runs 6.76 requests/s of summarise on its 4 replicas, and read 'ok'.

The hand case of test_agree_idle_phases: a KV-bound 8B chat on a 1-to-4 day beside a
nightly batch of 2 q(1) x 3,600 requests a day (12-hour deadline), soaked into the trough."""

import json
import math

import pytest
import yaml

from cli.simulate import simulation_tables
from models.io.loading import validate_instance
from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests.cli.test_markdown_outputs import only_table, pipe_tables
from tests.solver.time.test_months import _data, _lone_rps

DURATION_S = 40.0


def _with_nightly(growth: float, months: int) -> dict:
    """test_months' one-region chat (10.5 lone replicas' rate at the peak, a 1-2-3-4 day)
    over `months` at `growth`, beside a nightly batch of 2 x 3,600 x q(1) requests a day."""
    q = _lone_rps()
    data = _data(10.5 * q, growth, 0, months)
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 8 + [2, 3] + [4] * 14
    data["workloads"].append(
        {
            "name": "nightly",
            "model": "llama-3.1-8b",
            "deadline_hours": 12,
            "demand": {"r1": {"requests_per_day": 2 * 3600 * q}},
            "prompt_tokens": {"mean": 1000, "p99": 1000},
            "output_tokens": {"mean": 200, "p99": 200},
        }
    )
    return data


@pytest.fixture(scope="module")
def soaked():
    data = _with_nightly(0.0, 1)
    instance = validate_instance(data, "soak.yaml")
    plan = solve(instance)
    busiest = max(plan.hours, key=lambda h: sum(s.requests_per_s for s in h.batch_soak))
    run = simulate_plan(instance, plan, duration_s=DURATION_S, hour=busiest.hour)
    return instance, plan, busiest.hour, run


def _without_soak(plan):
    """The plan with no batch soaked in any hour: the interactive load alone."""
    hours = tuple(h.model_copy(update={"batch_soak": ()}) for h in plan.hours)
    return plan.model_copy(update={"hours": hours})


def test_the_replay_injects_the_soak_rate_the_plan_json_states(soaked):
    _, plan, hour, run = soaked
    stated = json.loads(plan.model_dump_json())
    (soak,) = next(h for h in stated["hours"] if h["hour"] == hour)["batch_soak"]
    rate = soak["requests_per_s"]  # the hour's soak on its one chat pool, from the JSON
    assert rate > 0
    (pool,) = [p for p in run.pools if p.batch]
    (batch,) = pool.batch
    assert (batch.batch, pool.workload, pool.region) == ("nightly", "chat", "r1")
    assert batch.planned_requests_per_s == pytest.approx(rate)
    # Poisson arrivals: the count over D s is rate x D with standard deviation
    # sqrt(rate x D); within 4 of them (a Poisson count strays that far 6e-5 of runs)
    expected = rate * DURATION_S
    assert abs(batch.injected - expected) <= 4 * math.sqrt(expected)
    assert not any("nightly" in n for n in run.not_simulated)  # replayed, not named
    # the row's load and latencies are the chat's alone: the hour's scenario 'none' row
    (hour_row,) = [h for h in plan.hours if h.hour == hour]
    (row,) = [r for s in hour_row.scenarios if s.name == "none" for r in s.pools]
    assert sum(p.load_requests_per_s for p in run.pools) == pytest.approx(row.load_requests_per_s)


def test_interactive_p99_beside_the_batch_is_no_better_than_alone(soaked):
    # The same interactive requests (the batch has its own seed), with the batch's
    # requests added to the same FIFO queues: the interactive tail can only lengthen.
    instance, plan, hour, run = soaked
    alone = simulate_plan(instance, _without_soak(plan), duration_s=DURATION_S, hour=hour)
    (with_batch,) = [p for p in run.pools if p.batch]
    (without,) = [p for p in alone.pools if p.configuration == with_batch.configuration]
    assert not without.batch
    assert with_batch.requests_measured == without.requests_measured
    assert with_batch.simulated.ttft_p99_ms >= without.simulated.ttft_p99_ms
    assert with_batch.simulated.tpot_p99_ms >= without.simulated.tpot_p99_ms
    assert with_batch.mean_batch > without.mean_batch  # the batch decodes beside the chat


def test_a_stable_pool_finishes_the_batch_at_its_rate_and_every_output_shows_it(soaked):
    # 01:00, a trough hour: 3 replicas carry the chat's 1 x 10.5 q and a soak. A batch
    # request takes ~200 decode steps (seconds), so the warm-up is 15 s of the 40 s, past
    # the time the pool takes to fill; then the finishes per second average the rate.
    instance, plan, _, _ = soaked
    run = simulate_plan(instance, plan, duration_s=DURATION_S, warmup_s=15.0, hour=1)
    (pool,) = [p for p in run.pools if p.batch]
    (batch,) = pool.batch
    assert batch.planned_requests_per_s > 0
    # within 4 Poisson standard deviations of rate x (40 - 15) s, and no shortfall named
    expected = batch.planned_requests_per_s * (DURATION_S - 15.0)
    assert abs(batch.finished_in_span - expected) <= 4 * math.sqrt(expected)
    assert not batch.shortfall and not run.batch_shortfalls
    assert json.loads(run.model_dump_json())["pools"][0]["batch"][0]["batch"] == "nightly"
    titles = [t.title for t in simulation_tables(run)]
    assert any(t.startswith("batch soaked beside") for t in titles)


def test_month_zero_of_the_plan_replays_the_same_soak_and_a_closed_loop_names_it(soaked):
    instance, plan, hour, run = soaked
    again = simulate_plan(instance, plan, duration_s=DURATION_S, hour=hour, month=0)
    assert [p.batch for p in again.pools] == [p.batch for p in run.pools]
    # a closed loop replays users, not rates: the batch is named, not dropped
    closed = simulate_plan(instance, plan, hour=hour, arrivals="burst", concurrency=1)
    assert not any(p.batch for p in closed.pools)
    (named,) = [n for n in closed.not_simulated if n.startswith("nightly soaked into")]
    assert "not replayed (a closed loop" in named


def test_simulate_month_1_shows_that_month_s_soak_in_every_output(run_cli, tmp_path):
    # Two months at 50% growth: month 1 states its own hours and soaks. simulate --month 1
    # --hour 1 replays month 1's 01:00 soak, read by hand from the plan JSON, in the
    # terminal table, the Markdown and the JSON, and names no batch as not replayed.
    data = _with_nightly(0.5, 2)
    instance, plan = tmp_path / "soak.yaml", tmp_path / "plan.json"
    instance.write_text(yaml.safe_dump(data))
    assert run_cli("solve", instance, "--json", plan).exit_code == 0
    (month,) = [m for m in json.loads(plan.read_text())["months"] if m["month"] == 1]
    (soak,) = next(h for h in month["hours"] if h["hour"] == 1)["batch_soak"]
    markdown, replay = tmp_path / "sim.md", tmp_path / "sim.json"
    ran = run_cli(
        "simulate", instance, plan, "--month", "1", "--hour", "1", "--duration-s", "20",
        "--no-tolerance", "--markdown", markdown, "--json", replay,
    )  # fmt: skip
    (pool,) = [p for p in json.loads(replay.read_text())["pools"] if p["batch"]]
    (batch,) = pool["batch"]
    assert batch["planned_requests_per_s"] == pytest.approx(soak["requests_per_s"])
    planned = f"{soak['requests_per_s']:,.2f}"
    (row,) = only_table(pipe_tables(markdown.read_text()), "batch soaked beside").rows
    assert (row["batch"], row["planned req/s"], row["injected"]) == (
        "nightly",
        planned,
        f"{batch['injected']:,}",
    )
    assert "batch soaked beside" in ran.stdout and planned in ran.stdout
    assert "not replayed: nightly" not in ran.stderr and "events in" in ran.stderr
