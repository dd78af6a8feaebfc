"""The program builder on hand-made candidate tables: names that read as sentences, the
coefficients of every family written out, routes the latency policy allows, and the
candidate rules (KV precision, pruning, pairing). No solver is needed here."""

import math

import pytest

from models.catalog import gpu, llm
from models.precision import Precision
from models.replica import Limit, ReplicaCapacity, ReplicaConfig, Role
from solver.candidates import (
    Candidate,
    CandidateTable,
    drop_unpaired,
    kv_precision_for,
    prune_dominated,
)
from solver.families import FAMILIES
from solver.lp import Sense
from solver.program import build_program
from solver.scenarios import NONE, RegionGraph, Scenario, ScenarioKind, failure_scenarios
from tests.synthetic import instance, workload

H100 = "h100-sxm"


def fake(
    w: str,
    rps: float,
    tp: int = 1,
    pp: int = 1,
    role: Role = Role.UNIFIED,
    gpu_name: str = H100,
    precision: Precision = Precision.FP8,
) -> Candidate:
    """A candidate with a made-up capacity (the physics is not under test here)."""
    config = ReplicaConfig(gpu(gpu_name), llm("llama-3.1-8b"), precision, precision, tp, pp, role)
    capacity = ReplicaCapacity(
        config=config,
        fits=True,
        meets_slo=True,
        requests_per_s=rps,
        limit=Limit.TPOT,
        reason="made up",
        weight_bytes_per_gpu=0.0,
        kv_bytes_per_token=0.0,
        kv_capacity_tokens=0.0,
        max_batch=1,
        batch=1.0,
        prefill_s=0.0,
        decode_step_s=0.0,
        ttft_p99_s=0.0,
        tpot_p99_s=0.0,
        best_ttft_p99_s=0.0,
        best_tpot_s=0.0,
        output_tokens_per_s=0.0,
        kv_transfer_bytes_per_request=0.0,
    )
    return Candidate(w, capacity)


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
    assert kv_precision_for(entry, Precision.BF16) is Precision.BF16
    assert kv_precision_for(entry, Precision.FP8) is Precision.FP8
    assert kv_precision_for(entry, Precision.FP4) is Precision.FP8
    pinned = entry.model_copy(update={"kv_precision": Precision.BF16})
    assert kv_precision_for(pinned, Precision.FP4) is Precision.BF16


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
