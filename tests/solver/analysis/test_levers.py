"""Levers: each one an instance transformation whose re-solve is the changed instance's
own plan, ranked by dollars."""

import pytest

from cli.levers import lever_table
from models.io.loading import load_instance
from models.schema.policy import Survive
from solver.analysis.levers import (
    HIT_RATE_STEP,
    SLO_LOOSENING,
    drop_failure_requirement,
    levers_for,
    looser_slo,
    lower_kv,
    more_prefix_hits,
    rank_levers,
    rounding_note,
    solve_lever,
)
from solver.analysis.paid import servers_bought
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic
from tests.paths import INSTANCES


@pytest.fixture(scope="module")
def base():
    return synthetic.instance(
        {"us": {"h100-sxm": (64, 2.40)}, "eu": {"h100-sxm": (64, 2.90)}},
        [synthetic.workload("chat", {"us": 12.0, "eu": 6.0})],
        links=[("us", "eu", 80.0)],
        survive="region",
    )


def test_levers_change_only_what_they_name(base):
    hits = more_prefix_hits(base)
    assert hits.workloads[0].prefix_cache_hit_rate == pytest.approx(HIT_RATE_STEP)
    looser = looser_slo("ttft_p99_ms")(base)
    assert looser.workloads[0].slo.ttft_p99_ms == pytest.approx(
        synthetic.TTFT_P99_MS * SLO_LOOSENING
    )
    assert looser.workloads[0].slo.tpot_p99_ms == base.workloads[0].slo.tpot_p99_ms
    assert drop_failure_requirement(base).policy.survive is Survive.NONE
    assert base.policy.survive is Survive.REGION  # the base is untouched
    names = [lever.name for lever in levers_for(base)]
    assert "allow co-location" not in names  # one workload: nobody to share with
    assert "allow disaggregation" in names
    assert "credit TPOT pooling" not in names  # on by default (issue 35)
    flat = synthetic.with_policy(base, credit_tpot_pooling=False)
    credited = {lever.name: lever for lever in levers_for(flat)}["credit TPOT pooling"]
    assert credited.apply(flat).policy.credit_tpot_pooling
    assert not flat.policy.credit_tpot_pooling


def test_each_lever_re_solve_equals_solving_the_changed_instance(base):
    base_plan = solve(base, SolveSettings.of(base, threads=1))
    base_cost = base_plan.cost_per_month
    chosen = {"prefix-cache hit +10 points", "TPOT +20%", "drop survive: region"}
    levers = {lever.name: lever for lever in levers_for(base) if lever.name in chosen}
    results = rank_levers(base, base_plan)
    by_name = {r.lever: r for r in results}
    for name, lever in levers.items():
        direct = solve(lever.apply(base), SolveSettings.of(base, threads=1))
        assert by_name[name].cost_per_month == pytest.approx(direct.cost_per_month, rel=1e-9)
        assert by_name[name].saving_per_month == pytest.approx(base_cost - direct.cost_per_month)
    savings = [r.saving_per_month for r in results if r.saving_per_month is not None]
    assert savings == sorted(savings, reverse=True)
    # dropping the region-loss requirement can only make the fleet cheaper
    assert by_name["drop survive: region"].saving_per_month >= 0


def test_a_saving_whole_servers_round_away_says_so():
    # region-loss-3: 60 requests/s of chat in each of 3 regions on H100s at $3.00 bought in
    # 8-GPU servers. Surviving a region loss needs more GPUs per region than serving
    # without failure, but at most 8 either way: one server per region, both plans
    # 3 x 8 x $3.00 x 730 h = $52,560, and the lever's "+0" hides the GPUs it saves.
    instance = load_instance(INSTANCES / "region-loss-3.yaml")
    base = solve(instance, SolveSettings.of(instance, threads=1))
    result = solve_lever(
        "drop survive: region", drop_failure_requirement(instance), base.cost_per_month, None
    )
    assert base.cost_per_month == result.cost_per_month == pytest.approx(3 * 8 * 3.00 * 730)
    assert servers_bought(base) == result.servers == 3
    saved = base.total_gpus - result.total_gpus
    assert saved > 0
    note = rounding_note(result, base)
    assert note == f"rounded to whole servers: {saved} GPUs saved, 0 servers"
    (row,) = lever_table((result.model_copy(update={"note": note}),)).rows
    assert row[2] == "+0" and row[-1] == note
    # a lever that saves a server's worth has nothing hidden
    assert rounding_note(result.model_copy(update={"saving_per_month": 17_520.0}), base) == ""


def test_an_infeasible_lever_gives_its_reason():
    # region-loss-3-baseline serves bf16 weights; its KV one step down is fp8, and the
    # "fp4 KV" lever from there asks an H100 (no fp4 arithmetic) for an fp4 KV cache
    instance = lower_kv(load_instance(INSTANCES / "region-loss-3-baseline.yaml"))
    assert "fp4 KV" in [lever.name for lever in levers_for(instance)]
    result = solve_lever("fp4 KV", lower_kv(instance), 0.0, None)
    assert result.status == "infeasible"
    assert "keeps its KV cache in fp4, which h100-sxm cannot hold" in result.reason
    (row,) = lever_table((result,)).rows
    assert row[-1] == result.reason
