"""Failover shown as it happens (issue 32): the utilisation by scenario of an hourly plan
counts the replicas started after the loss, `scenarios[].moves` says who is served where,
and the verifier reads the displayed numbers (a survivor shown over 100% is refused).

Property: on every verified plan, over small generated 3-region instances (static and
hourly with a start time), no displayed utilisation exceeds 1."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.solve import solve
from solver.verify.hours import verify_any, verify_hours
from tests.solver.time.test_failover_start import _instance as two_regions

REGIONS = ("r1", "r2", "r3")
LINKS_MS = (("r1", "r2", 20), ("r1", "r3", 40), ("r2", "r3", 30))


@pytest.fixture(scope="module")
def started():
    """Two regions (60 and 40 requests/s), T_s = 0: all spare started after the loss."""
    instance = two_regions(start_s=0)
    return instance, solve(instance)


def _loss(plan, name):
    return next(s for s in plan.scenarios if s.name == name)


def test_a_survivor_s_capacity_is_its_warm_replicas_plus_the_started_ones(started):
    _, plan = started
    lose = _loss(plan, "lose=r1")
    (load,) = lose.pools  # only r2 survives
    warm = next(p for p in plan.replicas if p.region == "r2")
    starts = [s.pool for s in plan.hours[lose.hour].failover_starts if s.scenario == "lose=r1"]
    assert starts and lose.started_replicas == tuple(starts)
    started_rps = sum(p.count * p.requests_per_s_per_replica for p in starts)
    assert load.started_requests_per_s == pytest.approx(started_rps)
    # warm part: the r2 pool at its size (the plan's own per-replica rate)
    assert load.capacity_requests_per_s - started_rps == pytest.approx(
        warm.count * warm.requests_per_s_per_replica
    )
    # both regions' users served in r2 after the start: the load is every route into r2
    assert load.load_requests_per_s == pytest.approx(
        sum(r.requests_per_s for r in lose.routing if r.destination == "r2")
    )
    assert {r.origin for r in lose.routing} == {"r1", "r2"}
    assert load.utilisation == pytest.approx(
        load.load_requests_per_s / load.capacity_requests_per_s
    )
    assert load.utilisation <= 1.0


def test_the_lost_region_s_users_are_its_moves(started):
    _, plan = started
    (move,) = _loss(plan, "lose=r1").moves
    assert (move.from_region, move.to_region, move.rtt_ms) == ("r1", "r2", 20)
    assert move.from_lost_region
    route = next(r for r in _loss(plan, "lose=r1").routing if r.origin == "r1")
    assert move.requests_per_s == route.requests_per_s
    assert _loss(plan, "none").moves == ()


def test_the_verifier_refuses_the_display_without_the_started_replicas(started):
    """The old display: capacity of the warm survivors only (r2's one replica carrying
    ~100 requests/s: over 200%), as it was before the started replicas were counted."""
    instance, plan = started
    lose = _loss(plan, "lose=r1")
    (load,) = lose.pools
    warm = load.capacity_requests_per_s - load.started_requests_per_s
    old = load.model_copy(
        update={
            "capacity_requests_per_s": warm,
            "started_requests_per_s": 0.0,
            "utilisation": load.load_requests_per_s / warm,
        }
    )
    assert old.utilisation > 2
    shown = tuple(
        s.model_copy(update={"pools": (old,), "started_replicas": ()}) if s is lose else s
        for s in plan.scenarios
    )
    found = verify_hours(instance, plan.model_copy(update={"scenarios": shown})).violations
    index = plan.scenarios.index(lose)
    assert any(
        v.requirement == f"scenarios[{index}].pools[0].utilisation"
        and "does not serve" in v.message
        for v in found
    )
    assert any(v.requirement == f"scenarios[{index}].started_replicas" for v in found)
    assert verify_hours(instance, plan).ok


def test_a_stated_move_that_is_not_a_route_is_refused(started):
    instance, plan = started
    lose = _loss(plan, "lose=r1")
    (move,) = lose.moves
    doubled = move.model_copy(update={"requests_per_s": 2 * move.requests_per_s})
    shown = tuple(
        s.model_copy(update={"moves": (doubled,)}) if s is lose else s for s in plan.scenarios
    )
    found = verify_hours(instance, plan.model_copy(update={"scenarios": shown})).violations
    assert any(v.requirement.endswith(".moves") for v in found)


def _three_regions(rates, start_s, hourly):
    supply = {"max_gpus": 64, "price_per_gpu_hour": 2.0}
    if hourly:
        supply["reserved_price_per_gpu_hour"] = 1.2
    slo = {"ttft_p99_ms": 1000, "tpot_p99_ms": 50, "max_failover_rtt_ms": 45}
    if hourly:
        slo["availability"] = 0.999
    policy = {
        "buy_unit": "gpu",
        "survive": "region",
        "tensor_parallel": [1],
        "replica_start_s": 240,
        "scale_detection_s": 60,
    }
    if hourly:
        policy["failover_start_s"] = start_s
    data = {
        "name": "three-regions",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": r, "supply": {"h100-sxm": dict(supply)}} for r in REGIONS],
        "links": [list(link) for link in LINKS_MS],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    r: {"peak_requests_per_s": rate} for r, rate in zip(REGIONS, rates, strict=True)
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": slo,
            }
        ],
        "policy": policy,
    }
    return validate_instance(data, "three-regions.yaml")


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rates=st.tuples(*[st.integers(10, 120) for _ in REGIONS]),
    start_s=st.sampled_from([0.0, 300.0, 3600.0]),
    hourly=st.booleans(),
)
def test_no_displayed_utilisation_exceeds_one_on_a_verified_plan(rates, start_s, hourly):
    instance = _three_regions(rates, start_s, hourly)
    plan = solve(instance)
    assert verify_any(instance, plan).ok
    for scenario in plan.scenarios:
        for load in scenario.pools:
            assert load.utilisation <= 1 + 1e-9, (scenario.name, load)
            assert 0 <= load.started_requests_per_s <= load.capacity_requests_per_s + 1e-9
        for move in scenario.moves:
            assert move.from_region != move.to_region
            assert move.rtt_ms <= 45


def test_the_terminal_shows_moves_and_warm_against_started_spare(started):
    from cli.render.failover_tables import failover_tables

    _, plan = started
    moves, spare = failover_tables(plan)
    assert moves.title == "Who moves where, by scenario"
    assert moves.rows[0][:4] == ("lose=r1", "chat", "r1", "r2")
    lose = _loss(plan, "lose=r1")
    (load,) = lose.pools
    (row,) = [r for r in spare.rows if r[0] == "lose=r1"]
    warm = load.capacity_requests_per_s - load.started_requests_per_s
    assert row[4] == f"{warm:,.2f}" and row[6] == f"{load.started_requests_per_s:,.2f}"
    assert spare.title.endswith(f"(the fleet of UTC hour {lose.hour})")


def test_explain_shows_the_spare_its_utilisation_note_points_to(started):
    """The utilisation table's note says the warm and started spare follows ("below"):
    explain's tables show it after that table, as solve's do (explain printed the note
    with no such table after it)."""
    from cli.render.plan_tables import explanation_tables
    from solver.analysis.explain import Explanation

    _, plan = started
    explanation = Explanation(
        instance="started",
        status="optimal",
        cost_per_month=plan.cost_per_month,
        binding=(),
        shadow_price_note="",
        utilisation=(),
        limits=(),
        alternatives=(),
        alternative_method="",
        families=(),
        plan=plan,
    )
    tables = explanation_tables(explanation)
    (at,) = [i for i, t in enumerate(tables) if t.title.startswith("Utilisation by scenario")]
    assert "(warm and started: below)" in tables[at].note
    after = [t.title for t in tables[at + 1 :]]
    assert any(title.startswith("Warm and started spare after each loss") for title in after)
