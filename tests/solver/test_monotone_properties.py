"""Monotone answers (issue 35): a looser question never has a costlier optimal answer.

Over generated small instances (one or two regions, H100 and/or H200, Llama 3.1 8B or
3.3 70B, drawn lengths and targets), solved to a zero MIP gap on highs:

- loosening any SLO (p99 TTFT, p99 TPOT, or both) never raises the optimal cost, and the
  tighter optimum, which the verifier accepts at the tighter targets, is accepted at the
  looser ones too and costs at least the looser optimum;
- adding supply, adding a GPU type or raising `max_utilization` never raises it.

Each holds because every plan of the tighter (smaller) question is a plan of the looser
one as the program credits it: the physics' q(n) never falls when a target loosens, and
the pool ladder credits pooled TTFT and TPOT alike (`policy.credit_tpot_pooling`, on by
default; off, a candidate that turned from TTFT- to TPOT-limited lost its ladder and the
tighter plan's credit: the issue's $136,656 -> $138,992 -> $145,416). The ladder's sizes
do not depend on the gains between them (`solver.candidates.pools.pool_ladder`: every
power of two up to the largest pool worth having), so a pool of n is credited q at the
same step at both targets, in full and less a replica or a zone, and never less at the
looser one. The ladder used to keep a size only when it lifted q 2% over the last size
kept: a looser target that lifted the sizes below could drop one and credit up to 2%
less between sizes, as in the example pinned below (a lone H200's q(2) 2.06% above q(1)
at TPOT 70 ms, 1.62% at 77.1 ms: the looser optimum bought 3 replicas for the tighter
one's 2, $4,380 against $2,920 a month). One gap is left by design: a candidate gets a
ladder only when an unlimited pool lifts q(1) by 2% (`POOL_STEP_GAIN`), so where a
looser target closes that gate its pools are credited q(1), at most 2% under the
tighter credit; 600 examples per property met no such case. What the looser program
may no longer offer are steps above its own largest useful pool (`largest_pool`,
`largest_useful_pool`: fewer replicas carry the load when q(1) rises), which a pool that
large does not need: it sheds replicas down to that size and still carries every load.
The costs compared are plan costs, whose objective also holds a tie-break below
$1/month (`ProgramSets.tie_break_per_gpu`).
"""

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from models.schema.instance import Instance
from solver.errors import Infeasible
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import instance, with_policy, workload

H100, H200, B200 = "h100-sxm", "h200", "b200"
TIE_BREAK_USD = 1.0
"""Most the tie-break term can move the cost of an optimal plan, $/month."""
PROPERTY = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""12 questions a property a run, new ones every run (~0.06 s of CPU each: 25 were 6.4 s of
the four), the pinned @example beside them: the 600 a property the docstring tells of
were a search, not what each run needs."""


@st.composite
def questions(draw) -> dict:
    """Arguments of a small instance whose replicas may be limited by either target."""
    regions = ["east", "west"][: draw(st.integers(1, 2))]
    gpus = draw(st.sampled_from([[H100], [H200], [H100, H200]]))
    model = draw(st.sampled_from(["llama-3.1-8b", "llama-3.3-70b"]))
    big = "70b" in model
    return {
        "supply": {
            r: {
                g: (draw(st.sampled_from([16, 64])), round(draw(st.floats(1.5, 4.0)), 2))
                for g in gpus
            }
            for r in regions
        },
        "demand": {r: round(draw(st.floats(1.0, 8.0 if big else 30.0)), 1) for r in regions},
        "model": model,
        "prompt": draw(st.sampled_from([500, 1500, 4000])),
        "output": draw(st.sampled_from([100, 400])),
        "ttft_ms": draw(st.sampled_from([400.0, 800.0, 1500.0, 3000.0])),
        "tpot_ms": draw(st.sampled_from([25.0, 40.0, 70.0])),
        "survive": draw(st.sampled_from(["none", "replica"])),
    }


def build(q: dict, ttft_ms=None, tpot_ms=None, supply_scale=1, extra_gpu=None) -> Instance:
    supply = {
        r: {g: (n * supply_scale, price) for g, (n, price) in offers.items()}
        for r, offers in q["supply"].items()
    }
    if extra_gpu:
        for offers in supply.values():
            offers.setdefault(extra_gpu, (64, 5.0))
    return instance(
        supply,
        [
            workload(
                "chat",
                q["demand"],
                model=q["model"],
                ttft_p99_ms=ttft_ms or q["ttft_ms"],
                tpot_p99_ms=tpot_ms or q["tpot_ms"],
                prompt_tokens=q["prompt"],
                output_tokens=q["output"],
                max_failover_rtt_ms=100,
            )
        ],
        links=[("east", "west", 40)] if len(supply) == 2 else [],
        survive=q["survive"],
        mip_gap=0.0,
    )


def solved(inst: Instance):
    """The optimal plan (verified), None when none exists."""
    try:
        plan = solve(inst)
    except Infeasible:
        return None
    check = verify(inst, plan)
    assert check.ok, check.violations
    return plan


def no_dearer(tight: Instance, loose: Instance) -> None:
    """The looser question's optimum costs no more than the tighter one's (skipped when
    the tighter one has no plan)."""
    before = solved(tight)
    assume(before is not None)
    _no_dearer_than(before, loose)


def _no_dearer_than(before, loose: Instance) -> None:
    after = solved(loose)
    assert after is not None, "a looser question lost every plan"
    assert after.cost_per_month <= before.cost_per_month + TIE_BREAK_USD


FOUND_TPOT_CASE = {
    "supply": {"east": {H200: (16, 2.0)}},
    "demand": {"east": 19.8},
    "model": "llama-3.1-8b",
    "prompt": 4000,
    "output": 400,
    "ttft_ms": 800.0,
    "tpot_ms": 70.0,
    "survive": "none",
}
"""The case hypothesis found at stop 21: a lone H200's q(2) 2.06% above q(1) at TPOT
70 ms, 1.62% at 77.1 ms (x 1.1015625); the 2% ladder then dropped size 2 and the looser
target cost $4,380 against $2,920 (tests/solver/candidates/test_pool_ladder.py too)."""


@PROPERTY
@given(questions(), st.sampled_from(["ttft", "tpot", "both"]), st.floats(1.1, 2.0))
@example(FOUND_TPOT_CASE, "tpot", 1.1015625)
def test_a_looser_slo_never_costs_more(q, which, factor):
    ttft = q["ttft_ms"] * (factor if which != "tpot" else 1)
    tpot = q["tpot_ms"] * (factor if which != "ttft" else 1)
    tight, loose = build(q), build(q, ttft_ms=ttft, tpot_ms=tpot)
    before = solved(tight)
    assume(before is not None)
    accepted = verify(loose, before)
    assert accepted.ok, accepted.violations  # the tighter plan meets the looser targets
    after = solved(loose)
    assert after is not None
    assert after.cost_per_month <= before.cost_per_month + TIE_BREAK_USD


@PROPERTY
@given(questions())
def test_more_supply_never_costs_more(q):
    no_dearer(build(q), build(q, supply_scale=4))


@PROPERTY
@given(questions())
def test_another_gpu_type_never_costs_more(q):
    assume(all(B200 not in offers for offers in q["supply"].values()))
    no_dearer(build(q), build(q, extra_gpu=B200))


@PROPERTY
@given(questions(), st.sampled_from([0.6, 0.8]), st.floats(0.05, 0.4))
def test_more_utilization_never_costs_more(q, low, more):
    base = build(q)
    no_dearer(
        with_policy(base, max_utilization=low),
        with_policy(base, max_utilization=min(low + more, 1.0)),
    )


@pytest.mark.parametrize(
    ("ttft_ms", "looser_ms"), [(1000.0, 1200.0), (1200.0, 1500.0), (1000.0, 1500.0)]
)
def test_issue_35s_looser_chat_ttft_is_no_dearer(ttft_ms, looser_ms):
    """The issue's case in small: a 70B chat workload in two regions whose lone replica
    turns from TTFT- to TPOT-limited as the TTFT target loosens."""
    q = {
        "supply": {"east": {H100: (64, 2.4), H200: (64, 3.1)}, "west": {H100: (64, 2.6)}},
        "demand": {"east": 40.0, "west": 20.0},
        "model": "llama-3.3-70b",
        "prompt": 1500,
        "output": 400,
        "ttft_ms": ttft_ms,
        "tpot_ms": 50.0,
        "survive": "none",
    }
    before = solved(build(q))
    assert before is not None
    _no_dearer_than(before, build(q, ttft_ms=looser_ms))
