"""simulate names the batch the planner soaks into the replayed hour's pools: the engine
replays one workload per pool, so a soaked batch's requests are not in the replay, and
the replay's load is the interactive load alone. Before, nothing said so:
diurnal-chat-batch at 05:00 UTC replayed us-east's chat pool at 7.51 requests/s where
the plan also runs 6.76 requests/s of summarise on its 4 replicas, and read 'ok'.

The hand case of test_agree_idle_phases: a KV-bound 8B chat on a 1-to-4 day beside a
nightly batch of 2 q(1) x 3,600 requests a day (12-hour deadline), soaked into the trough."""

import pytest

from models.io.loading import validate_instance
from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps


@pytest.fixture(scope="module")
def soaked():
    q = _lone_rps()
    data = _data(10.5 * q, 0.0, 0, 1)
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
    instance = validate_instance(data, "soak.yaml")
    return instance, solve(instance)


def test_the_replayed_hour_names_the_batch_it_soaks_at_the_plan_s_rate(soaked):
    instance, plan = soaked
    busiest = max(plan.hours, key=lambda h: sum(s.requests_per_s for s in h.batch_soak))
    (soak,) = busiest.batch_soak
    assert soak.requests_per_s > 0
    run = simulate_plan(instance, plan, duration_s=20, hour=busiest.hour, tolerance=False)
    (named,) = [n for n in run.not_simulated if soak.batch in n]
    assert f"{soak.requests_per_s:.2f} requests/s" in named
    # the replayed load is the chat's alone: the hour's scenario 'none' row
    (row,) = [r for s in busiest.scenarios if s.name == "none" for r in s.pools]
    assert sum(p.load_requests_per_s for p in run.pools) == pytest.approx(row.load_requests_per_s)
