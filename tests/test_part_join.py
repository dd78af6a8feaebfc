"""Joining the workload programs (solver.part_join): a join that takes more of a region's
supply than it holds is mended by solving the workloads that share it together, and the
plan is the one the whole program gives."""

import pytest

from solver.candidates import build_candidates
from solver.lp import SolveResult, Termination
from solver.part_join import GAP_KEPT, gap_left, joined_purchases
from solver.program import build_program
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


def test_workloads_that_compete_for_supply_are_solved_together():
    """Together they share the 4 H100s two by two: each tops its 2 q_h100 up with
    ceil((100 - 2 q_h100) / q_a100) A100s (one workload with 3 and the other with 1
    would need more A100s); `mail` takes one west H100. Cost: (4 x $1 + 2a x $10 +
    1 x $2) x 730."""
    inst = competing()
    table = build_candidates(inst)
    q = {c.gpu: c.requests_per_s for c in table.of("chat")}
    assert 2 * q["h100-sxm"] < 100 <= 3 * q["h100-sxm"] and q["h100-sxm"] >= 30
    a100s = -(-(100 - 2 * q["h100-sxm"]) // q["a100-80gb-sxm"])
    plan = solve(inst)
    assert plan.cost_per_month == pytest.approx((4 * 1.0 + 2 * a100s * 10.0 + 1 * 2.0) * HOURS)
    assert plan.solver.method == (
        "decomposed by coupled workloads: 2 independent programs joined, "
        "1 of them workloads that compete for supply"
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
