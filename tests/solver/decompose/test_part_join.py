"""Joining the workload programs (solver.decompose.join): a join that takes more of a region's
supply than it holds is mended by re-solving its largest user within a share of it
(solver.decompose.join_mend), or else by solving the workloads that share it together, and the
plan is the one the whole program gives."""

import time

import pytest
from hypothesis import assume, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.by_workload import WHOLE_AFTER_JOIN_SHARE
from solver.decompose.join import solve_by_workload
from solver.decompose.join_mend import (
    cheapest_givers,
    fixed_outside,
    giving_back,
    reach,
    supply_shares,
)
from solver.decompose.join_run import GAP_KEPT, gap_left
from solver.decompose.join_values import joined_purchases
from solver.program.build import build_program
from solver.program.lp import Constraint, Sense, SolveResult, Termination
from solver.settings import SOLVE_SHARE, SolveSettings
from solver.solve import solve
from tests.synthetic import FLAT_SLO, instance, workload

HOURS = 730


def competing() -> object:
    """Two 8B workloads of 100 req/s each in `east`, where 4 H100s at $1/GPU-hour are on
    offer beside A100s at $10, and a third in `west` with its own supply. Apart, each
    east workload takes 3 H100s (3 q_h100 >= 100 > 2 q_h100): 6 of the 4."""
    return instance(
        {
            "east": {"h100-sxm": (4, 1.0), "a100-80gb-sxm": (64, 10.0)},
            "west": {"h100-sxm": (64, 2.0)},
        },
        [
            workload("chat", {"east": 100.0}, **FLAT_SLO),
            workload("docs", {"east": 100.0}, **FLAT_SLO),
            workload("mail", {"west": 30.0}, **FLAT_SLO),
        ],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
    )


def test_workloads_that_compete_for_supply_share_it_at_the_joint_optimum():
    """Together they share the 4 H100s two by two: each tops its 2 q_h100 up with
    ceil((100 - 2 q_h100) / q_a100) A100s (one workload with 3 and the other with 1
    would need more A100s); `mail` takes one west H100. Cost: (4 x $1 + 2a x $10 +
    1 x $2) x 730. The two east workloads reach it apart, re-solved paying a price on
    east's H100s (solver.decompose.join_price), whose Lagrangian bound proves it at a zero gap:
    no merged program is solved."""
    inst = competing()
    table = build_candidates(inst)
    q = {c.gpu: c.requests_per_s for c in table.of("chat")}
    assert 2 * q["h100-sxm"] < 100 <= 3 * q["h100-sxm"] and q["h100-sxm"] >= 30
    a100s = -(-(100 - 2 * q["h100-sxm"]) // q["a100-80gb-sxm"])
    plan = solve(inst)
    assert plan.cost_per_month == pytest.approx((4 * 1.0 + 2 * a100s * 10.0 + 1 * 2.0) * HOURS)
    assert plan.solver.method == (
        "decomposed by workload: 3 independent programs joined, "
        "2 re-solved to fit a region's supply"
    )


def test_purchases_are_counted_on_the_joined_replicas():
    """A join's purchases are the GPUs its replicas use in each region beyond what is
    owned: 3 + 3 east H100 replicas of one GPU each buy 6."""
    inst = competing()
    program = build_program(inst, build_candidates(inst))
    h100 = "h100-sxm.fp8.tp1pp1.unified"
    values = {f"replicas[chat,{h100},east]": 3.0, f"replicas[docs,{h100},east]": 3.0}
    bought = joined_purchases(program, values)
    assert bought["purchased[east,h100-sxm]"] == 6.0
    assert bought["purchased[west,h100-sxm]"] == 0.0


def _result(objective: float, gap: float) -> SolveResult:
    return SolveResult(Termination.OPTIMAL, "highs", "", 0.0, objective, mip_gap=gap)


def test_a_merged_part_may_use_the_gap_the_settled_parts_leave():
    """Requested 0.1%. A settled part of $1,000 proved to 0.02% uses $0.20 of the slack;
    the pending merge of two workloads that cost $500 and $300 apart (estimate $800)
    may stop at (0.001 x 1,800 x 0.9 - 0.20) / 800 = 0.18%."""
    settled, a, b = ("mail",), ("chat",), ("docs",)
    results = {settled: _result(1000.0, 0.0002), a: _result(500.0, 0.0), b: _result(300.0, 0.0)}
    merged = ("chat", "docs")
    gap = gap_left(1e-3, [merged, settled], [merged], results)
    assert gap == pytest.approx((0.001 * 1800 * (1 - GAP_KEPT) - 0.2) / 800)
    # Never below the requested gap, even when the settled parts used it all.
    results[settled] = _result(1000.0, 0.01)
    assert gap_left(1e-3, [merged, settled], [merged], results) == 1e-3


def _uneven(mail_rps: float | None, mip_gap: float) -> object:
    """`chat` (95 req/s) and `docs` (9 req/s) in `east`, where 3 H100s at $1/GPU-hour
    are on offer beside A100s at $1.5; with `mail_rps`, `mail` in `west` with 64 H100s at
    $2. Apart, chat takes 3 H100s (3 q_h >= 95; 2 H100s and an A100 cost $3.5) and docs 1
    (q_h >= 9 and $1 < $1.5): 4 of the 3."""
    loads = [
        workload("chat", {"east": 95.0}, **FLAT_SLO),
        workload("docs", {"east": 9.0}, **FLAT_SLO),
    ]
    supply = {"east": {"h100-sxm": (3, 1.0), "a100-80gb-sxm": (64, 1.5)}}
    if mail_rps is not None:
        loads.append(workload("mail", {"west": mail_rps}, **FLAT_SLO))
        supply["west"] = {"h100-sxm": (64, 2.0)}
    return instance(supply, loads, models={"llama-3.1-8b": ["fp8", "bf16"]}, mip_gap=mip_gap)


def _capacities(inst) -> tuple[float, float]:
    """q(1) of the H100 and A100 replicas (FLAT_SLO: n replicas carry n q(1))."""
    q = {c.gpu: c.requests_per_s for c in build_candidates(inst).of("chat")}
    return q["h100-sxm"], q["a100-80gb-sxm"]


def test_the_largest_user_of_an_overfilled_supply_is_re_solved_within_its_share():
    """The excess is 1 H100; chat, the largest user, may use 3 - 1 = 2 and tops them up
    with one A100 (95 - 2 q_h <= q_a): east costs 2 x $1 + $1.5 + docs' $1 = $4.5, as
    much as the other way round (chat 3 H100s, docs one A100: $3 + $1.5). mail's 1,000
    req/s take ceil(1,000 / q_h) = 23 west H100s. The parts apart bound the whole at
    $3 + $1 + 23 x $2 = $50, so the mended join ($50.5, 0.99% above) is within a 2% gap
    and no merge is needed."""
    inst = _uneven(1000.0, mip_gap=0.02)
    q_h, q_a = _capacities(inst)
    assert 2 * q_h < 95 <= 3 * q_h and 95 - 2 * q_h <= q_a and q_a >= 9
    assert -(-1000 // q_h) == 23
    plan = solve(inst)
    assert plan.cost_per_month == pytest.approx((2 * 1.0 + 1.5 + 1.0 + 23 * 2.0) * HOURS)
    assert plan.status == "optimal"
    assert plan.solver.mip_gap == pytest.approx(0.5 / 50.5, rel=1e-3)
    assert plan.solver.method == (
        "decomposed by workload: 3 independent programs joined, "
        "1 re-solved to fit a region's supply"
    )


def test_a_price_on_the_overfilled_row_proves_the_mended_join():
    """Without mail the join mended by shares costs $4.5 against the parts' bound of
    $3 + $1. The mend's price of east's H100s is what it cost over the GPUs it gave
    back: ($4.5 - $4) / 1 = $0.5 per GPU-hour. Paying it, chat costs
    min(3 x 1.5, 2 x 1.5 + 1.5) = $4.5 and docs min(1.5, 1.5) = $1.5, so the Lagrangian
    bound is 4.5 + 1.5 - 0.5 x 3 = $4.5: the join is proved optimal apart."""
    inst = _uneven(None, mip_gap=0.0)
    program = build_program(inst, build_candidates(inst))
    settings = SolveSettings.of(inst).with_duals(False)
    joined = solve_by_workload(program, get_backend("highs"), settings)
    assert joined.result.termination is Termination.OPTIMAL
    # the objective holds the tie-break on GPUs used: below $1/month in all
    assert joined.result.objective == pytest.approx(4.5 * HOURS, abs=1.0)
    assert joined.result.mip_gap == pytest.approx(0.0, abs=1.0 / (4.5 * HOURS))


def test_a_mended_join_outside_the_gap_is_kept_when_no_merge_proves_better(monkeypatch):
    """Without mail the join mended by shares costs $4.5 against the parts' bound of
    $3 + $1: a gap of 0.5 / 4.5, outside the requested 0. chat and docs re-solved
    together around east (the local merge: nothing is outside east) cost $4.5 too, and
    so does giving the excess H100 back (solver.decompose.join_mend.giving_back): chat on 2 H100s
    and an A100 (+$0.5 for 1 GPU) and docs on an A100 (+$0.5 for 1 GPU) tie, chat is
    taken by name, and that latest join (1 re-solved) is kept. With no price tried (the
    price above proves it), merging
    them for a bound leaves one part, the whole, which the decomposition does not
    solve: it returns the kept join, FEASIBLE with that gap. `solve` then solves the
    whole program from it and proves $4.5 optimal, and says it started from the join."""
    monkeypatch.setattr("solver.decompose.join.PRICE_ROUNDS", 0)
    inst = _uneven(None, mip_gap=0.0)
    program = build_program(inst, build_candidates(inst))
    settings = SolveSettings.of(inst).with_duals(False)
    joined = solve_by_workload(program, get_backend("highs"), settings)
    assert joined.result.termination is Termination.FEASIBLE
    assert joined.result.mip_gap == pytest.approx(0.5 / 4.5, rel=1e-3)
    assert joined.mended == 1
    plan = solve(inst)
    assert plan.cost_per_month == pytest.approx(4.5 * HOURS)
    assert plan.status == "optimal"
    # the join it started from: ($4.5 - $4) / $4.5 = 11.11% above the parts' bound
    assert plan.solver.method == (
        "one program, started from the joined workload programs (gap 11.11% to their bound)"
    )


def _supply_row(coefficients: dict[str, float], rhs: float) -> Constraint:
    name = "gpu_supply[east,h100-sxm]"
    return Constraint(name, "gpu_supply", coefficients, Sense.LE, rhs)


def test_supply_shares_split_the_excess_among_the_largest_users():
    """Uses 3 (chat) and 3 (docs) of 4: the excess of 2 is within chat's use (the
    first of the largest, by name), which may keep 3 - 2 = 1. Uses 2, 2 and 2 (mail's
    one replica of 2 GPUs) of 1: the excess of 5 takes all three, each keeping
    2 - 5 x 2 / 6 = 1/3 (together 1, the row's right-hand side)."""
    owner = {"a": ("chat",), "b": ("docs",), "c": ("mail",)}
    row = _supply_row({"a": 1.0, "b": 1.0, "c": 2.0}, 4.0)
    shares = supply_shares([row], {"a": 3.0, "b": 3.0, "c": 0.0}, owner)
    assert shares == {("chat",): {row.name: pytest.approx(1.0)}}
    row = _supply_row({"a": 1.0, "b": 1.0, "c": 2.0}, 1.0)
    shares = supply_shares([row], {"a": 2.0, "b": 2.0, "c": 1.0}, owner)
    assert shares == {part: {row.name: pytest.approx(1 / 3)} for part in owner.values()}


def test_giving_back_asks_each_user_for_the_whole_excess_or_all_it_uses():
    """Uses 3 (chat), 3 (docs) and 1 (mail) of 5: the excess is 2; chat and docs may
    keep 3 - 2 = 1 each, mail none (it uses less than the excess)."""
    owner = {"a": ("chat",), "b": ("docs",), "c": ("mail",)}
    row = _supply_row({"a": 1.0, "b": 1.0, "c": 1.0}, 5.0)
    excess, shares = giving_back(row, {"a": 3.0, "b": 3.0, "c": 1.0}, owner)
    assert excess == 2.0
    name = row.name
    assert shares == {("chat",): {name: 1.0}, ("docs",): {name: 1.0}, ("mail",): {name: 0.0}}


def test_the_cheapest_givers_per_gpu_are_taken_until_the_excess_is_back():
    """Offers (extra $, GPUs back): chat (10, 2) at $5/GPU, docs (4, 1) at $4, mail
    (3, 1) at $3, code (0, 0) gives nothing back. For an excess of 2: mail, then docs
    ($7 in all, where chat alone costs $10). For 5, more than the 4 on offer: None."""
    offers = {
        ("chat",): (10.0, 2.0),
        ("docs",): (4.0, 1.0),
        ("mail",): (3.0, 1.0),
        ("code",): (0.0, 0.0),
    }
    assert cheapest_givers(offers, 2.0) == [("mail",), ("docs",)]
    assert cheapest_givers(offers, 0.5) == [("mail",)]
    assert cheapest_givers(offers, 5.0) is None


@examples(max_examples=200, deadline=None)
@given(
    offers=st.lists(st.tuples(st.floats(0.0, 1e4), st.floats(0.0, 16.0)), min_size=1, max_size=8),
    excess=st.floats(0.01, 40.0),
)
def test_the_givers_cover_the_excess_and_no_cheaper_one_is_left_out(offers, excess):
    """For any offers: the givers taken give back at least the excess (None only when
    all together do not), and every giver left out costs at least as much per GPU as
    every one taken."""
    named = {(f"w{i}",): offer for i, offer in enumerate(offers)}
    taken = cheapest_givers(named, excess)
    if taken is None:
        assert sum(back for _, back in offers) < excess
        return
    assert sum(named[p][1] for p in taken) >= excess
    per_gpu = {p: named[p][0] / named[p][1] for p in taken}
    for part, (extra, back) in named.items():
        if part not in taken and back > 0:
            assert extra / back >= max(per_gpu.values())


def test_supply_shares_mend_supply_rows_only():
    """A broken row of another family, or one whose excess lies outside the parts'
    columns, has no shares."""
    owner = {"a": ("chat",)}
    other = Constraint("power[east]", "power", {"a": 1.0}, Sense.LE, 1.0)
    assert supply_shares([other], {"a": 3.0}, owner) is None
    outside = _supply_row({"a": 1.0, "x": 1.0}, 1.0)
    assert supply_shares([outside], {"a": 1.0, "x": 3.0}, owner) is None


def test_an_unproven_join_is_the_plan_when_the_time_is_nearly_out(monkeypatch):
    """The same instance, with no price tried, and 70 s of a 100 s limit spent: the
    solve may use 80 s of it (SOLVE_SHARE), so 10 s are left, under
    WHOLE_AFTER_JOIN_SHARE of the limit. The kept join (chat giving the excess H100
    back, the latest of the $4.5 joins) is the plan, verified, `feasible` with its gap
    of 0.5 / 4.5 stated, rather than a whole solve that could not end in time."""
    monkeypatch.setattr("solver.decompose.join.PRICE_ROUNDS", 0)
    inst = _uneven(None, mip_gap=0.0)
    settings = SolveSettings.of(inst, time_limit_s=100.0).started(at=time.monotonic() - 70.0)
    left_s = settings.within(SOLVE_SHARE).remaining_s()
    assert left_s == pytest.approx(100.0 * SOLVE_SHARE - 70.0, abs=1)
    assert left_s < WHOLE_AFTER_JOIN_SHARE * 100.0
    plan = solve(inst, settings)
    assert plan.status == "feasible (gap 11.11%)"  # 0.5 / 4.5
    assert plan.cost_per_month == pytest.approx(4.5 * HOURS)
    assert plan.solver.mip_gap == pytest.approx(0.5 / 4.5, rel=1e-3)
    assert plan.solver.method == (
        "decomposed by workload: 2 independent programs joined, "
        "1 re-solved to fit a region's supply"
    )


@examples(max_examples=200, deadline=None)
@given(
    uses=st.lists(st.integers(0, 16), min_size=1, max_size=6),
    gpus=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=6, max_size=6),
    room=st.floats(0.0, 1.0),
)
def test_supply_shares_fit_the_row_and_take_only_from_users(uses, gpus, room):
    """For any overfilled supply row: every share lies between 0 and its part's use,
    and the shares with the untouched parts' use fill the row exactly."""
    names = [f"x{i}" for i in range(len(uses))]
    owner = {name: (f"w{i}",) for i, name in enumerate(names)}
    values = {name: float(n) for name, n in zip(names, uses, strict=True)}
    coefficients = {name: float(g) for name, g in zip(names, gpus, strict=False)}
    total = sum(coefficients[n] * values[n] for n in names)
    assume(total > 0)
    row = _supply_row(coefficients, room * total * 0.99)
    shares = supply_shares([row], values, owner)
    used = {owner[n]: coefficients[n] * values[n] for n in names}
    assert shares is not None
    for part, rows in shares.items():
        assert -1e-9 <= rows[row.name] <= used[part] + 1e-9
    kept = sum(u for part, u in used.items() if part not in shares)
    assert kept + sum(rows[row.name] for rows in shares.values()) == pytest.approx(row.rhs)


@examples(max_examples=12, deadline=None)
@given(
    h100s=st.integers(0, 8),
    a100_price=st.sampled_from([1.5, 3.0, 10.0]),
    demands=st.lists(st.sampled_from([5.0, 9.0, 40.0, 95.0, 150.0]), min_size=2, max_size=3),
    west=st.sampled_from([None, 30.0, 1000.0]),
)
def test_a_decomposed_solve_of_competing_workloads_is_the_joint_optimum(
    h100s, a100_price, demands, west
):
    """Workloads in `east` competing for a few cheap H100s beside A100s (and maybe one
    in `west` on its own supply): whatever mends the join (shares, a merge, or the whole
    solved from the best join), the plan at a zero gap costs the whole program's
    optimum."""
    loads = [workload(f"w{i}", {"east": rate}, **FLAT_SLO) for i, rate in enumerate(demands)]
    supply = {"east": {"h100-sxm": (h100s, 1.0), "a100-80gb-sxm": (64, a100_price)}}
    if west is not None:
        loads.append(workload("mail", {"west": west}, **FLAT_SLO))
        supply["west"] = {"h100-sxm": (64, 2.0)}
    inst = instance(supply, loads, models={"llama-3.1-8b": ["fp8", "bf16"]})
    program = build_program(inst, build_candidates(inst))
    whole = get_backend("highs").solve(program.lp, mip_gap=0.0, time_limit_s=60)
    plan = solve(inst)
    assert plan.status == "optimal"
    assert plan.cost_per_month == pytest.approx(whole.objective, abs=1.0)


def test_reach_joins_a_region_to_every_region_a_route_links_it_to():
    """Routes none: each region home; lose=a: a's users to b, c's users to b. b's
    capacity can take load from a and c; c's only from b's side of the routes."""
    routes = {
        ("none", "w"): (("a", "a", 0.0), ("b", "b", 0.0), ("c", "c", 0.0)),
        ("lose=a", "w"): (("a", "b", 20.0), ("c", "b", 40.0), ("c", "c", 0.0)),
    }
    assert reach(routes, "b") == {"a", "b", "c"}
    assert reach(routes, "c") == {"b", "c"}
    assert reach({("none", "w"): (("a", "a", 0.0),)}, "a") == {"a"}


def test_fixed_outside_holds_every_column_but_the_regions_and_purchases():
    """With east free: east's pool and the load served in east stay free, west's pool
    and west's own load are held at their values (an absent one at 0), and purchases are
    free everywhere (the join recounts them)."""
    key = "h100-sxm.fp8.tp1pp1.unified"
    columns = [
        f"replicas[w,{key},east]",
        f"replicas[w,{key},west]",
        "served[none,w,west,east]",
        "served[none,w,west,west]",
        "served[none,w,east,west]",
        "purchased[west,h100-sxm]",
    ]
    values = {f"replicas[w,{key},west]": 3.0, "served[none,w,west,west]": 5.0}
    assert fixed_outside(columns, values, {"east"}) == {
        f"replicas[w,{key},west]": (3.0, 3.0),
        "served[none,w,west,west]": (5.0, 5.0),
        "served[none,w,east,west]": (0.0, 0.0),
    }
