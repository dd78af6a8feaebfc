"""The program builder on hand-made candidate tables: names that read as sentences, the
coefficients of every family written out, routes the latency policy allows, and the
candidate rules (KV precision, pruning, pairing). No solver is needed here."""

import math
from dataclasses import replace

import pytest

from models.operations.scenarios import NONE, RegionGraph, Scenario, ScenarioKind, failure_scenarios
from models.physics.catalog import gpu, llm
from models.physics.memory import kv_precision_for
from models.physics.precision import Precision
from models.serving.replica import ReplicaConfig, Role
from solver.backends import available_backends, get_backend
from solver.candidates.pools import PoolCurve, PoolStep
from solver.candidates.table import (
    Candidate,
    CandidateTable,
    drop_unpaired,
    prune_dominated,
)
from solver.program.build import build_program
from solver.program.families import FAMILIES
from solver.program.lp import Sense
from tests.synthetic import instance, made_up_capacity, workload

H100 = "h100-sxm"


def fake(
    w: str,
    rps: float,
    tp: int = 1,
    pp: int = 1,
    role: Role = Role.UNIFIED,
    gpu_name: str = H100,
    precision: Precision = Precision.FP8,
    ladder: dict[int, float] | None = None,
) -> Candidate:
    """A candidate with a made-up capacity (the physics is not under test here); `ladder`
    maps pool sizes to made-up capacities per replica in pools that large."""
    config = ReplicaConfig(gpu(gpu_name), llm("llama-3.1-8b"), precision, precision, tp, pp, role)
    capacity = made_up_capacity(config, requests_per_s=rps, max_batch=1, batch=1.0)
    steps = tuple(PoolStep(n, q) for n, q in sorted((ladder or {}).items()))
    points = ((s.replicas, replace(capacity, requests_per_s=s.requests_per_s)) for s in steps)
    curve = PoolCurve(((1, capacity), *points), steps[-1].requests_per_s if steps else rps)
    return Candidate(w, capacity, curve, steps)


def three_regions(survive: str = "region", max_rtt: float | None = 100.0, **kw):
    """us-east, us-west, eu-west as in the default instance: eu-west and us-west are 140 ms
    apart directly and 137 ms through us-east."""
    return instance(
        {r: {H100: (64, 2.0)} for r in ("us-east", "us-west", "eu-west")},
        [
            workload(
                "chat", {"us-east": 10, "us-west": 5, "eu-west": 3}, max_failover_rtt_ms=max_rtt
            )
        ],
        links=[("us-east", "us-west", 62), ("us-east", "eu-west", 75), ("us-west", "eu-west", 140)],
        survive=survive,
        **kw,
    )


def test_row_names_read_as_sentences():
    inst = three_regions()
    program = build_program(inst, CandidateTable({"chat": (fake("chat", 4.0),)}))
    rows = program.lp.constraints
    for name in (
        "demand[none,chat,us-east]",
        "demand[lose=eu-west,chat,eu-west]",
        "capacity[lose=eu-west,chat,us-east,unified]",
        "gpu_supply[us-east,h100-sxm]",
        "purchase[us-east,h100-sxm]",
    ):
        assert name in rows
    # A lost region serves nothing: no capacity row, no route into it.
    assert "capacity[lose=eu-west,chat,eu-west,unified]" not in rows
    assert not [
        v
        for v in program.lp.variables
        if v.startswith("served[lose=eu-west,chat,") and v.endswith(",eu-west]")
    ]


def test_every_row_belongs_to_a_registered_family_with_a_dual_unit():
    inst = three_regions(survive="replica")
    table = CandidateTable({"chat": (fake("chat", 4.0), fake("chat", 9.0, tp=2))})
    program = build_program(inst, table)
    for row in program.lp.constraints.values():
        family = FAMILIES[row.family]
        assert row.name.startswith(family.name + "[")
        assert family.description and family.dual_unit.startswith("$/month per")


def test_capacity_and_supply_coefficients_are_the_candidate_numbers():
    inst = three_regions(survive="none")
    small, large = fake("chat", 4.0, tp=1), fake("chat", 9.5, tp=2)
    program = build_program(inst, CandidateTable({"chat": (small, large)}))
    capacity = program.lp.constraints["capacity[none,chat,us-east,unified]"]
    assert capacity.sense is Sense.GE and capacity.rhs == 0.0
    assert capacity.coefficients == {
        f"replicas[chat,{small.key},us-east]": 4.0,
        f"replicas[chat,{large.key},us-east]": 9.5,
        "served[none,chat,us-east,us-east]": -1.0,
    }
    supply = program.lp.constraints["gpu_supply[us-east,h100-sxm]"]
    assert supply.sense is Sense.LE and supply.rhs == 64
    assert supply.coefficients == {
        f"replicas[chat,{small.key},us-east]": 1.0,
        f"replicas[chat,{large.key},us-east]": 2.0,
    }
    demand = program.lp.constraints["demand[none,chat,us-west]"]
    assert demand.sense is Sense.EQ and demand.rhs == 5
    assert demand.coefficients == {"served[none,chat,us-west,us-west]": 1.0}
    # 64 GPUs hold 64 one-GPU replicas or 32 two-GPU ones.
    assert program.lp.variables[f"replicas[chat,{small.key},us-east]"].upper == 64
    assert program.lp.variables[f"replicas[chat,{large.key},us-east]"].upper == 32


def test_failover_routes_respect_the_rtt_limit_and_avoid_the_lost_region():
    program = build_program(three_regions(), CandidateTable({"chat": (fake("chat", 4.0),)}))
    served = {v for v in program.lp.variables if v.startswith("served[")}
    # eu-west users may go to us-east (75 ms) but never to us-west (140 ms direct, and
    # 137 ms through us-east), whichever region is lost.
    assert "served[lose=eu-west,chat,eu-west,us-east]" in served
    assert not any(
        v.startswith("served[lose=") and v.endswith(",chat,eu-west,us-west]") for v in served
    )
    # In `none`, users stay home.
    assert {v for v in served if v.startswith("served[none,")} == {
        "served[none,chat,us-east,us-east]",
        "served[none,chat,us-west,us-west]",
        "served[none,chat,eu-west,eu-west]",
    }


def test_no_rtt_limit_reaches_anywhere_but_not_through_the_lost_region():
    graph = RegionGraph.of(three_regions(max_rtt=None))
    lose_east = Scenario("lose=us-east", ScenarioKind.REGION, "us-east")
    # With us-east gone, us-west reaches eu-west only over the direct 140 ms link.
    assert graph.destinations(lose_east, "us-west", None) == {"us-west": 0.0, "eu-west": 140.0}
    # us-east's own users still start there: 62 ms to us-west, 75 ms to eu-west.
    assert graph.destinations(lose_east, "us-east", None) == {"us-west": 62.0, "eu-west": 75.0}


def test_zone_survivors_keep_n_minus_ceil_n_over_zones():
    inst = three_regions(survive="zone", zones=3)
    c = fake("chat", 4.0)
    program = build_program(inst, CandidateTable({"chat": (c,)}))
    row = program.lp.constraints[f"zone_survivors[chat,{c.key},us-east]"]
    assert row.sense is Sense.LE and row.rhs == 0.0
    assert row.coefficients == {
        f"zone_survivors[chat,{c.key},us-east]": 3.0,
        f"replicas[chat,{c.key},us-east]": -2.0,
    }
    capacity = program.lp.constraints["capacity[lose=us-east/zone,chat,us-east,unified]"]
    assert f"zone_survivors[chat,{c.key},us-east]" in capacity.coefficients
    # The largest integer s with 3 s <= 2 n is n - ceil(n / 3):
    for n in range(0, 20):
        assert math.floor(2 * n / 3) == n - math.ceil(n / 3)
        assert NONE.surviving_replicas("us-east", n, 3) == n
        zone = Scenario("lose=us-east/zone", ScenarioKind.ZONE, "us-east")
        assert zone.surviving_replicas("us-east", n, 3) == n - math.ceil(n / 3)


def test_replica_spare_rows_take_one_replica_of_each_pool_away():
    inst = three_regions(survive="replica")
    a, b = fake("chat", 4.0), fake("chat", 9.0, tp=2)
    program = build_program(inst, CandidateTable({"chat": (a, b)}))
    rows = program.lp.constraints
    spare = rows[f"replica_spare[chat,us-east,unified,{b.key}]"]
    assert spare.coefficients == {
        f"replicas[chat,{a.key},us-east]": 4.0,
        f"replicas[chat,{b.key},us-east]": 9.0,
        f"pool_used[chat,{b.key},us-east]": -9.0,
        "served[none,chat,us-east,us-east]": -1.0,
    }
    assert rows[f"pool_open[chat,{a.key},us-east]"].coefficients == {
        f"replicas[chat,{a.key},us-east]": 1.0,
        f"pool_used[chat,{a.key},us-east]": -64.0,
    }


def test_disaggregated_modes_split_the_load_and_pair_by_precision():
    inst = three_regions(survive="none", disaggregation=True)
    table = CandidateTable(
        {
            "chat": (
                fake("chat", 4.0),
                fake("chat", 6.0, role=Role.PREFILL),
                fake("chat", 12.0, role=Role.DECODE),
                fake("chat", 3.0, role=Role.PREFILL, precision=Precision.BF16, tp=2),
                fake("chat", 6.0, role=Role.DECODE, precision=Precision.BF16, tp=2),
            )
        }
    )
    rows = build_program(inst, table).lp.constraints
    split = rows["mode_split[none,chat,us-east]"]
    assert split.coefficients == {
        "unified[none,chat,us-east]": 1.0,
        "disagg-bf16[none,chat,us-east]": 1.0,
        "disagg-fp8[none,chat,us-east]": 1.0,
        "served[none,chat,us-east,us-east]": -1.0,
    }
    prefill = rows["capacity[none,chat,us-east,prefill-fp8]"]
    decode = rows["capacity[none,chat,us-east,decode-fp8]"]
    assert prefill.coefficients["disagg-fp8[none,chat,us-east]"] == -1.0
    assert decode.coefficients["disagg-fp8[none,chat,us-east]"] == -1.0
    assert sorted(prefill.coefficients.values()) == [-1.0, 6.0]
    assert sorted(decode.coefficients.values()) == [-1.0, 12.0]


def test_tie_break_stays_below_a_dollar_per_month():
    inst = three_regions()
    c = fake("chat", 4.0)
    program = build_program(inst, CandidateTable({"chat": (c,)}))
    per_gpu = program.lp.objective[f"replicas[chat,{c.key},us-east]"]
    every_gpu = 3 * 64
    assert per_gpu * every_gpu < 1.0
    assert program.lp.objective["purchased[us-east,h100-sxm]"] == pytest.approx(2.0 * 730)


def test_kv_precision_follows_weights_but_never_below_fp8():
    entry = three_regions().models[0]
    assert entry.kv_precision is None
    assert kv_precision_for(Precision.BF16, entry.kv_precision) is Precision.BF16
    assert kv_precision_for(Precision.FP8, entry.kv_precision) is Precision.FP8
    assert kv_precision_for(Precision.FP4, entry.kv_precision) is Precision.FP8
    assert kv_precision_for(Precision.FP4, Precision.BF16) is Precision.BF16


def test_pruning_keeps_the_front_of_capacity_per_gpu_against_replica_size():
    one = fake("w", 4.0, tp=1)
    two_worse = fake("w", 7.9, tp=2)  # 2 x 4.0 = 8.0 >= 7.9: dominated by two of `one`
    two_better = fake("w", 8.5, tp=2)  # more than two of `one`: kept
    four = fake("w", 16.0, tp=4)  # 2 x 8.5 = 17 >= 16: dominated by two of `two_better`
    pp3 = fake("w", 12.5, tp=1, pp=3)  # 3 x 4.0 = 12 < 12.5, and 2 does not divide 3: kept
    other_gpu = fake("w", 1.0, gpu_name="h200")  # another group: kept
    kept = prune_dominated([one, two_worse, two_better, four, pp3, other_gpu])
    assert kept == [one, two_better, pp3, other_gpu]


def test_half_a_disaggregated_pair_is_dropped():
    prefill_fp8 = fake("w", 3.0, role=Role.PREFILL)
    decode_fp8 = fake("w", 5.0, role=Role.DECODE)
    prefill_bf16 = fake("w", 2.0, role=Role.PREFILL, precision=Precision.BF16)
    unified = fake("w", 1.0)
    kept = drop_unpaired([prefill_fp8, decode_fp8, prefill_bf16, unified])
    assert kept == [prefill_fp8, decode_fp8, unified]


@pytest.mark.parametrize(
    ("survive", "names"),
    [
        ("none", ["none"]),
        ("replica", ["none", "lose=replica"]),
        ("region", ["none", "lose=us-east", "lose=us-west", "lose=eu-west"]),
    ],
)
def test_scenarios_follow_the_policy(survive, names):
    assert [f.name for f in failure_scenarios(three_regions(survive=survive))] == names


# --- pooling steps ----------------------------------------------------------------------

ALONE, PAIR, QUAD = 1.0, 1.5, 1.75
"""Made-up capacity per replica of a lone replica, a pool of 2 or 3, a pool of 4 or more."""


def pooled(**kw) -> Candidate:
    return fake("chat", ALONE, ladder={2: PAIR, 4: QUAD}, **kw)


def test_a_pool_is_credited_each_step_it_holds_telescoping_to_its_size():
    c = pooled()
    program = build_program(three_regions(survive="none"), CandidateTable({"chat": (c,)}))
    rows, key = program.lp.constraints, c.key
    capacity = rows["capacity[none,chat,us-east,unified]"]
    # q(1) x replicas + (q(2) - q(1)) x pooled[2] + (q(4) - q(2)) x pooled[4]
    assert capacity.coefficients == {
        f"replicas[chat,{key},us-east]": ALONE,
        f"pooled[chat,{key},us-east,2]": PAIR - ALONE,
        f"pooled[chat,{key},us-east,4]": QUAD - PAIR,
        "served[none,chat,us-east,us-east]": -1.0,
    }
    size = rows[f"pool_size[chat,{key},us-east,4]"]
    assert size.sense is Sense.GE and size.rhs == 0.0
    assert size.coefficients == {
        f"replicas[chat,{key},us-east]": 1.0,
        f"pool_at_least[chat,{key},us-east,4]": -4.0,
    }
    # pooled[4] <= pooled[2] <= replicas, and pooled[k] <= M x pool_at_least[k]
    assert rows[f"pooled_within[chat,{key},us-east,4]"].coefficients == {
        f"pooled[chat,{key},us-east,4]": 1.0,
        f"pooled[chat,{key},us-east,2]": -1.0,
    }
    assert rows[f"pooled_within[chat,{key},us-east,2]"].coefficients == {
        f"pooled[chat,{key},us-east,2]": 1.0,
        f"replicas[chat,{key},us-east]": -1.0,
    }
    # M = n_max, the smallest pool that carries all us-east may be sent (10 requests/s,
    # no failover in `none`) as credited: 5 x 1.75 = 8.75 < 10 <= 6 x 1.75.
    opened = rows[f"pooled_open[chat,{key},us-east,4]"]
    assert opened.coefficients[f"pool_at_least[chat,{key},us-east,4]"] == -6.0
    assert program.lp.variables[f"pooled[chat,{key},us-east,4]"].upper == 6
    assert program.lp.variables[f"pool_at_least[chat,{key},us-east,2]"].integer
    # eu-west (3 requests/s) needs no more than a pair (2 x 1.5 = 3): no step to 4.
    assert f"pool_at_least[chat,{key},eu-west,2]" in program.lp.variables
    assert f"pool_at_least[chat,{key},eu-west,4]" not in program.lp.variables


def test_survivors_are_credited_as_the_smaller_pool_they_are():
    c = pooled()
    key = c.key
    zone = build_program(
        three_regions(survive="zone", zones=2), CandidateTable({"chat": (c,)})
    ).lp.constraints
    # Two zones: a pool of P keeps P - ceil(P / 2): 2 -> 1 (q(1): no gain), 4 -> 2 (q(2)).
    row = zone["capacity[lose=us-east/zone,chat,us-east,unified]"].coefficients
    assert {v: q for v, q in row.items() if not v.startswith("served[")} == {
        f"zone_survivors[chat,{key},us-east]": ALONE,
        f"pooled_survivors[chat,{key},us-east,4]": PAIR - ALONE,
    }
    assert zone[f"pooled_survivors_within[chat,{key},us-east,4]"].coefficients == {
        f"pooled_survivors[chat,{key},us-east,4]": 1.0,
        f"pooled_survivors[chat,{key},us-east,2]": -1.0,
    }
    spare = build_program(
        three_regions(survive="replica"), CandidateTable({"chat": (c,)})
    ).lp.constraints[f"replica_spare[chat,us-east,unified,{key}]"]
    # Less one replica: q(1) (n - used) + (q(1) - q(1)) (pooled[2] - at_least[2])
    #                   + (q(3) - q(1)) (pooled[4] - at_least[4]), q(3) = q(2).
    assert spare.coefficients == {
        f"replicas[chat,{key},us-east]": ALONE,
        f"pool_used[chat,{key},us-east]": -ALONE,
        f"pooled[chat,{key},us-east,4]": PAIR - ALONE,
        f"pool_at_least[chat,{key},us-east,4]": -(PAIR - ALONE),
        "served[none,chat,us-east,us-east]": -1.0,
    }


def solve_lp(inst, table, backend: str):
    program = build_program(inst, table)
    result = get_backend(backend).solve(program.lp, mip_gap=0.0, time_limit_s=30)
    assert result.termination.has_solution
    return program, {k: round(v, 6) for k, v in result.values.items()}


@pytest.fixture(params=available_backends())
def backend(request) -> str:
    return request.param


@pytest.mark.parametrize(
    ("demand", "replicas", "needed_steps"),
    [
        # 2 alone carry 2 x 1.0 = 2: no step needed.
        (1.9, 2, ()),
        # 2 as a pair carry 2 x 1.5 = 3 >= 2.9.
        (2.9, 2, (2,)),
        # 3 as a pair carry 4.5 < 4.6. Crediting them as a pool of 4 (3 x 1.75 = 5.25)
        # would be unsound; pool_size asks for a 4th replica (4 x 1.5 = 6 as a pair).
        (4.6, 4, (2,)),
        # 4 x 1.5 = 6 < 6.9 <= 4 x 1.75 = 7: only the step to 4 carries it.
        (6.9, 4, (2, 4)),
    ],
)
def test_the_program_credits_a_step_only_to_a_pool_that_large(
    backend, demand, replicas, needed_steps
):
    inst = instance({"east": {H100: (64, 2.0)}}, [workload("chat", {"east": demand})])
    c = fake("chat", ALONE, ladder={2: PAIR, 4: QUAD})
    program, values = solve_lp(inst, CandidateTable({"chat": (c,)}), backend)
    assert values[f"replicas[chat,{c.key},east]"] == replicas
    for size in needed_steps:
        assert values[f"pool_at_least[chat,{c.key},east,{size}]"] == 1
    # Whatever the solver chose, what it credited is what a pool of that size carries.
    credit = program.lp.constraints["capacity[none,chat,east,unified]"].activity(values)
    assert credit + demand <= replicas * c.requests_per_s_at(replicas) + 1e-6


def test_pooling_never_makes_the_plan_dearer_than_single_servers(backend):
    inst = three_regions(survive="region")
    lone = CandidateTable({"chat": (fake("chat", 4.0),)})
    pool = CandidateTable({"chat": (fake("chat", 4.0, ladder={2: 6.0, 4: 7.0}),)})
    _, without = solve_lp(inst, lone, backend)
    program, with_pools = solve_lp(inst, pool, backend)
    cost = program.lp.objective_value
    assert cost(with_pools) <= cost(without) + 1e-6
    # Any two regions carry all 18 requests/s when the third is lost: 3 + 3 + 2 replicas
    # at 4.0 alone; a pair in each region at 6.0 per replica does it with 6.
    assert sum(v for k, v in without.items() if k.startswith("replicas[")) == 8
    assert sum(v for k, v in with_pools.items() if k.startswith("replicas[")) == 6
