"""Warm and cold pools (`policy.warm_cold_split`): the split of a workload by hand, the
solver taking it only where it is cheaper, the verifier checking a split plan."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.colocation.warm_cold import split_workload, splittable, warm_cold_instance
from models.io.loading import load_instance
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import INSTANCES
from tests.synthetic import with_policy

AFFINITY = INSTANCES / "prefix-affinity-doc-qa.yaml"


def _allowing(instance, **update):
    return with_policy(instance, **{"warm_cold_split": True, **update})


def _at_rate(instance, rate: float):
    workload = instance.workloads[0]
    level = workload.demand["us-east"].model_copy(update={"peak_requests_per_s": rate})
    moved = workload.model_copy(update={"demand": {"us-east": level}})
    return instance.model_copy(update={"workloads": [moved]})


def test_doc_qa_splits_into_warm_and_cold_halves_by_hand():
    # 150 customers x 0.5% = 75% of the requests carry a document: warm share w = 0.75.
    # Warm: 0.75 x 6 = 4.5 req/s, each document at 0.5% / 0.75 = 1/150 of the warm
    # requests (every warm request carries one); cold: 0.25 x 6 = 1.5 req/s with the
    # system prompt only. Both keep the 2K system prompt on every request.
    workload = load_instance(AFFINITY).workloads[0]
    warm, cold = split_workload(workload)
    assert (warm.name, cold.name) == ("doc-qa-warm", "doc-qa-cold")
    assert warm.demand["us-east"].peak_requests_per_s == pytest.approx(6 * 0.75)
    assert cold.demand["us-east"].peak_requests_per_s == pytest.approx(6 * 0.25)
    assert [(p.tokens, p.share, p.count) for p in warm.prefixes] == [
        (2000, 1.0, 1),
        (20000, pytest.approx(0.005 / 0.75), 150),
    ]
    assert [(p.tokens, p.share) for p in cold.prefixes] == [(2000, 1.0)]
    assert "prefix_cache_hit_rate" not in warm.model_fields_set  # hits from the prefixes


def test_only_opted_in_workloads_with_steering_prefixes_split():
    base = load_instance(AFFINITY)
    assert splittable(base) == ()  # opt-in
    assert splittable(_allowing(base)) == ("doc-qa",)
    cached = load_instance(INSTANCES / "long-prompt-32k-cached.yaml")
    assert splittable(_allowing(cached)) == ()  # an explicit hit rate: nothing to split by


def test_doc_qa_split_is_taken_only_when_cheaper():
    allowed = _allowing(load_instance(AFFINITY))
    whole = solve(load_instance(AFFINITY)).cost_per_month
    split = solve(warm_cold_instance(allowed, ("doc-qa",))).cost_per_month
    plan = solve(allowed)
    assert plan.cost_per_month == pytest.approx(min(whole, split))
    assert (plan.warm_cold_split == ("doc-qa",)) == (split < whole * (1 - 1e-9))
    assert plan.warm_cold_unsplit_cost_per_month == pytest.approx(whole)
    assert any("warm/cold split of doc-qa" in note for note in plan.notes)
    assert verify(allowed, plan).ok


def test_a_split_plan_is_verified_against_its_halves():
    allowed = _allowing(load_instance(AFFINITY))
    halves = warm_cold_instance(allowed, ("doc-qa",))
    plan = solve(halves).model_copy(update={"warm_cold_split": ("doc-qa",)})
    assert {p.workload for p in plan.replicas} <= {"doc-qa-warm", "doc-qa-cold"}
    assert verify(allowed, plan).ok
    refused = verify(load_instance(AFFINITY), plan)  # the policy does not allow it
    assert not refused.ok
    assert refused.violations[0].requirement == "warm_cold_split"
    unknown = plan.model_copy(update={"warm_cold_split": ("chat",)})
    assert "chat" in verify(allowed, unknown).violations[0].message


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([0.5, 1.5, 3.0, 4.5, 9.0]), st.booleans())
def test_allowing_the_split_never_raises_cost(rate, affinity):
    base = _at_rate(load_instance(AFFINITY), rate)
    base = with_policy(base, prefix_affinity=affinity)
    allowed = _allowing(base)
    assert solve(allowed).cost_per_month <= solve(base).cost_per_month * (1 + 1e-9)


def test_a_split_the_limit_stops_leaves_the_whole_plan_the_answer():
    """The whole plan is in hand when the split's solve reaches the deadline: the whole
    plan is the answer, its note saying the split had no plan within the time limit
    (before, the TimeLimitReached of the split's solve ended the run with exit 4)."""
    from dataclasses import dataclass

    from solver.colocation.warm_cold import solve_choosing_split
    from solver.settings import SolveSettings, TimeLimitReached

    @dataclass
    class Solved:
        plan: object

    allowed = _allowing(load_instance(AFFINITY))
    whole = Solved(solve(load_instance(AFFINITY)))

    def solve_one(instance, _settings):
        if instance.workloads[0].name == "doc-qa":
            return whole
        raise TimeLimitReached("solve", 60.0, 61.0)

    chosen = solve_choosing_split(allowed, ("doc-qa",), SolveSettings(), solve_one)
    assert chosen.plan.cost_per_month == whole.plan.cost_per_month
    assert not chosen.plan.warm_cold_split
    assert any("no plan within the time limit" in note for note in chosen.plan.notes)
