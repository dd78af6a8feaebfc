"""Levers on hourly instances (issue 32): `explain --levers` re-solves the hourly program,
with the levers of time (solver.analysis.levers.time_levers) beside the others.

Hand case: tests/solver/time/test_whole_servers.py's region r1 alone, at P = 11.7 q with
a trough at a third of the peak for 12 hours: 4 GPUs in the trough (10 h), 8 at the
shoulders (2 h), 12 at the peak (12 h); one 8-GPU server reserved ($1.2/GPU-h) and one
rented at the peak ($2.0/GPU-h): 24 x 8 x 1.2 + 12 x 8 x 2.0 = 422.4 $/day."""

import json

import pytest

from models.io.loading import validate_instance
from solver.analysis.lever_edits import (
    RESERVED_DISCOUNT,
    flatten_day,
    levers_for,
    supply_edit,
    time_levers,
)
from solver.analysis.lever_solve import solve_lever
from solver.simulate import effects
from tests.solver.time.test_whole_servers import (
    DAYS,
    ON_DEMAND,
    RESERVED,
    _data,
    _instance,
    _lone_rps,
)

BASE_PER_DAY = 24 * 8 * RESERVED + 12 * 8 * ON_DEMAND


@pytest.fixture(scope="module")
def hourly():
    return _instance({"r1": 11.7 * _lone_rps()})


def test_the_levers_of_time_apply_to_hourly_instances_only(hourly):
    names = {lever.name for lever in levers_for(hourly)}
    assert {"daily profile flattened", "reserved price -10%"} <= names
    # no availability target, no on-demand cap, no spot price: those levers do not apply
    assert not names & {"failover start -50%", "lift on-demand caps", "interactive spot (99%)"}
    static = _instance({"r1": 11.7 * _lone_rps()}, profile=None, reserved=())
    assert time_levers(static) == []


def test_a_flat_day_of_the_same_volume_by_hand(hourly):
    # mean w / max w = 2 / 3: the flat day runs at 2/3 x 11.7 q = 7.8 q -> 8 GPUs every
    # hour, one reserved server: 24 x 8 x 1.2 = 230.4 $/day.
    flat = flatten_day(hourly)
    (demand,) = flat.workloads[0].demand.values()
    assert demand.hourly_profile == [1.0] * 24
    assert demand.peak_requests_per_s == pytest.approx(11.7 * _lone_rps() * 2 / 3)
    result = solve_lever("daily profile flattened", flat, DAYS * BASE_PER_DAY, None)
    assert result.cost_per_month == pytest.approx(DAYS * 24 * 8 * RESERVED, abs=0.005)
    assert result.saving_per_month == pytest.approx(DAYS * (BASE_PER_DAY - 230.4), abs=0.005)


def test_a_cheaper_reservation_by_hand(hourly):
    # At 0.9 x 1.2 = 1.08 $/GPU-h one server stays reserved (a second, busy 14 h a day,
    # would cost 24 x 8 x 1.08 = 207.36 against 12 x 8 x 2.0 = 192 on demand): the saving
    # is 24 x 8 x (1.2 - 1.08) = 23.04 $/day.
    cheaper = supply_edit("reserved_price_per_gpu_hour", lambda p: RESERVED_DISCOUNT * p)(hourly)
    result = solve_lever("reserved price -10%", cheaper, DAYS * BASE_PER_DAY, None)
    assert result.saving_per_month == pytest.approx(DAYS * 24 * 8 * 0.12, abs=0.005)


REPLAY_S = 10.0
"""Seconds of arrivals a pool in the hourly explain's engine-effects replay here: the
replay of an hourly plan (its peak hour's pools, at the instance the plan answers) runs
and gives a row a pool, as at explain's own 120 s (EXPLAIN_DURATION_S), which made it 90%
of this test's CPU time; what the rows say at 120 s is tests/solver/analysis's."""


def test_explain_levers_on_an_hourly_instance_re_solves_the_hourly_program(
    run_cli, tmp_path, monkeypatch
):
    real = effects.effects_until
    monkeypatch.setattr(
        effects,
        "effects_until",
        lambda instance, plan, stop: real(instance, plan, stop, duration_s=REPLAY_S),
    )
    data = _data({"r1": 11.7 * _lone_rps()})
    data["gpus"] = [{"name": "h100-sxm"}]
    path = tmp_path / "hourly.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "levers.json"
    result = run_cli("explain", path, "--levers", "--jobs", "1", "--json", out)
    assert result.exit_code == 0, result.stderr
    assert "Levers ranked by dollars" in result.stdout
    report = json.loads(out.read_text())
    assert report["plan"]["hours"] and report["cost_per_month"] == pytest.approx(
        DAYS * BASE_PER_DAY, abs=0.005
    )
    levers = {r["lever"]: r for r in report["levers"]}
    assert levers["daily profile flattened"]["saving_per_month"] == pytest.approx(
        DAYS * (BASE_PER_DAY - 230.4), abs=0.005
    )
    savings = [r["saving_per_month"] for r in report["levers"] if r["saving_per_month"] is not None]
    assert savings == sorted(savings, reverse=True)  # ranked by dollars
    # the levers compose with the explanation: each chosen pool's alternative is there too
    assert "Without each chosen pool" in result.stdout
    assert {(a["workload"], a["region"]) for a in report["alternatives"]} == {
        (p["workload"], p["region"]) for p in report["plan"]["replicas"]
    }
    # and the engine effects: the peak hour's pools replayed, one row a pool
    assert report["engine_effects_method"].startswith("simulated")
    assert {(e["workload"], e["region"]) for e in report["engine_effects"]} == {
        (p["workload"], p["region"]) for p in report["plan"]["replicas"]
    }


def test_interactive_spot_relaxes_the_question(hourly):
    """`interactive spot (99%)` only lets interactive pools run spot replicas (a pool
    with none is held to no more than before), so every plan of the instance is one of
    the lever's at the same cost: the base plan verifies under it at 422.4 $/day. Such a
    lever starts from the base plan and never reads dearer than it (lever_solve.base_is_better);
    it was not marked so, and `explain --levers` on diurnal-chat-batch read 'interactive
    spot (99%)' at $27,764/month, saving -$784, beside a base of $26,981 (its re-solve
    stopped by its share, gap 18.9%)."""
    from solver.solve import solve
    from solver.verify.hours import verify_any

    data = _data({"r1": 11.7 * _lone_rps()})
    data["regions"][0]["supply"]["h100-sxm"] |= {
        "spot_price_per_gpu_hour": 1.9,
        "spot_interruptions_per_hour": 0.2,
    }
    offered = validate_instance(data, "spot.yaml")
    (lever,) = [lever for lever in levers_for(offered) if lever.name == "interactive spot (99%)"]
    assert lever.relaxes
    loosened = lever.apply(offered)
    assert loosened is not None and loosened.policy.spot_confidence == 0.99
    base = solve(offered)
    assert base.cost_per_month == pytest.approx(DAYS * BASE_PER_DAY, abs=0.005)
    check = verify_any(loosened, base)
    assert check.ok, check.violations
