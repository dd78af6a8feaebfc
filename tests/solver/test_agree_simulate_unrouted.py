"""simulate accounts for every pool of the plan: one that no row of the scenario routes
load to (held for another scenario) is named in `not_simulated`, and an hourly plan's
default replay is its peak hour's pools, not the day's largest fleet.

Before: such a pool was left out of the replay without a word (a zone-survive plan of
3 regions: 6 pools in the plan, 5 in the table, none named), and the default replay of
an hourly plan looked pools up in the plan's `replicas` (each pool at its largest count
over the day, pools the peak hour does not run among them)."""

from solver.simulate.failover import UNROUTED_NOTE
from solver.simulate.hours import replayed_hour
from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests import synthetic


def test_a_pool_held_for_a_failover_is_named_when_the_scenario_sends_it_nothing():
    """Chat's users are all in east; west holds chat replicas for lose=east alone
    (50 ms away, within the 80 ms failover round trip): with no failure no row lists
    west's pool, and the replay names it."""
    inst = synthetic.instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.1)}},
        [synthetic.workload("chat", {"east": 20.0}, max_failover_rtt_ms=80)],
        links=[("east", "west", 50)],
        survive="region",
    )
    plan = solve(inst)
    west = [p for p in plan.replicas if p.region == "west"]
    assert west  # held for lose=east
    replay = simulate_plan(inst, plan, duration_s=5.0)
    replayed = {(p.region, p.configuration) for p in replay.pools}
    named = [n for n in replay.not_simulated if UNROUTED_NOTE in n]
    for pool in plan.replicas:
        listed = (pool.region, pool.label) in replayed
        assert listed != any(
            f"{pool.region} unified: {pool.count} x {pool.label}" in n for n in named
        )
    assert {n.split(":")[0] for n in named} == {"chat west unified"}
    lost = simulate_plan(inst, plan, scenario="lose=east", duration_s=5.0)
    assert not [n for n in lost.not_simulated if UNROUTED_NOTE in n]  # west serves all


def test_the_default_replay_of_an_hourly_plan_is_its_peak_hours_pools(tmp_path_factory):
    from tests.solved_once import peak_hour_plan

    _, plan = peak_hour_plan(tmp_path_factory)  # test_agree_peak_hour's day, once a run
    # the day's fleet may hold a pool the peak hour does not run (a trough's layout):
    # one more chat pool of another TP stands for it
    (chat,) = [p for p in plan.replicas if p.workload == "chat"]
    trough = chat.model_copy(update={"tp": 2, "gpus": 2 * chat.count})
    plan = plan.model_copy(update={"replicas": (*plan.replicas, trough)})
    view = replayed_hour(plan)
    peak = next(h for h in plan.hours if h.hour == view.hour)
    assert view.plan.replicas == peak.pools
    assert view.plan.scenarios == peak.scenarios
