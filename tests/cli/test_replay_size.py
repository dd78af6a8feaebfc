"""Replays too large to run are refused before they start. The router scans every replica
of a pool for each request, so one second of three 10^5 requests/s pools of ~9,700
replicas is ~3 x 10^9 router steps: `simulate --duration-s 1` ran for over an hour, and
`explain --time-limit 20` hung past its limit in its engine-effects replay (120 s of
arrivals, five runs). Now `simulate` exits 2 naming the longest duration that fits, and
`explain` answers in time with the effects "not simulated" and why."""

import json
import time

import pytest

from models.schema import flag_limits
from solver.plan.schema import Plan
from solver.simulate.replay_size import replay_router_steps
from tests.guards import failing_after, ticking_clock

RATE = 1e5


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Region-loss-3 at 10^5 requests/s in each region, with the GPUs to serve it."""
    from models.io.documents import read_document
    from tests.paths import INSTANCES

    data, _ = read_document(INSTANCES / "region-loss-3.yaml", what="instance")
    for region in data["regions"]:
        region["supply"]["h100-sxm"]["max_gpus"] = 1_000_000
    data["workloads"][0]["demand"] = {
        r["name"]: {"peak_requests_per_s": RATE} for r in data["regions"]
    }
    folder = tmp_path_factory.mktemp("big")
    instance = folder / "big.json"
    instance.write_text(json.dumps(data))
    return instance


def test_simulate_refuses_a_replay_beyond_the_bound_and_names_what_fits(run_cli, big, tmp_path):
    plan_file = tmp_path / "plan.json"
    assert run_cli("solve", big, "--json", plan_file).exit_code == 0
    plan = Plan.model_validate_json(plan_file.read_text())
    (none,) = [s for s in plan.scenarios if s.name == "none"]
    replicas = {p.region: p.count for p in plan.replicas}
    # by hand: each region's pool routes RATE x 1 s requests among its replicas (+1)
    steps = sum(RATE * 1.0 * (replicas[row.region] + 1) for row in none.pools)
    assert replay_router_steps(plan, "none", 1.0) == pytest.approx(steps)
    assert steps > flag_limits.REPLAY_ROUTER_STEPS.count
    started = time.process_time()  # CPU: a blow-up, not the machine's load
    result = run_cli("simulate", big, plan_file, "--duration-s", "1", "--no-tolerance")
    assert time.process_time() - started < 30
    assert result.exit_code == 2, result.stderr
    longest = flag_limits.REPLAY_ROUTER_STEPS.count / steps
    assert f"the longest that fits is {longest:.3g} s" in result.stderr


def test_explain_answers_within_its_limit_without_the_effects_replay(run_cli, big, monkeypatch):
    """The replay is left out for its size, named, whatever the machine: on the wall, a
    loaded machine passed the 20 s limit in the re-solves first ('not simulated: the time
    limit had passed when the re-solves ended', seen at load 10), so the run's clock stands
    still here (tests.guards.ticking_clock at 0 s a reading); a hang is still held at
    60 s."""
    ticking_clock(monkeypatch, 0.0)
    with failing_after(60, "explain --time-limit 20"):
        result = run_cli("explain", big, "--time-limit", "20", "--json", "-")
    assert result.exit_code == 0, result.stderr
    explanation = json.loads(result.stdout)
    assert explanation["engine_effects"] == []
    assert explanation["engine_effects_method"].startswith("not simulated: 5 runs of 120 s")
