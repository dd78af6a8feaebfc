"""Levers: each one an instance transformation whose re-solve is the changed instance's
own plan, ranked by dollars."""

import pytest

from models.schema.policy import Survive
from solver.analysis.levers import (
    HIT_RATE_STEP,
    SLO_LOOSENING,
    drop_failure_requirement,
    levers_for,
    looser_slo,
    more_prefix_hits,
    rank_levers,
)
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic


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
    credited = {lever.name: lever for lever in levers_for(base)}["credit TPOT pooling"]
    assert credited.apply(base).policy.credit_tpot_pooling
    assert not base.policy.credit_tpot_pooling


def test_each_lever_re_solve_equals_solving_the_changed_instance(base):
    base_cost = solve(base, SolveSettings.of(base, threads=1)).cost_per_month
    chosen = {"prefix-cache hit +10 points", "TPOT +20%", "drop survive: region"}
    levers = {lever.name: lever for lever in levers_for(base) if lever.name in chosen}
    results = rank_levers(base, base_cost)
    by_name = {r.lever: r for r in results}
    for name, lever in levers.items():
        direct = solve(lever.apply(base), SolveSettings.of(base, threads=1))
        assert by_name[name].cost_per_month == pytest.approx(direct.cost_per_month, rel=1e-9)
        assert by_name[name].saving_per_month == pytest.approx(base_cost - direct.cost_per_month)
    savings = [r.saving_per_month for r in results if r.saving_per_month is not None]
    assert savings == sorted(savings, reverse=True)
    # dropping the region-loss requirement can only make the fleet cheaper
    assert by_name["drop survive: region"].saving_per_month >= 0
