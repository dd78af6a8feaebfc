"""The valid inequalities of solver.program.families.tightening: their rows written out by
hand on a tiny program, off unless settings ask, and (hypothesis, HiGHS) the optimum of
small programs unchanged by them."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.table import CandidateTable
from solver.program.build import build_program
from solver.program.families.tightening import step_servers_needed
from solver.program.lp import Sense
from solver.settings import SolveSettings
from tests.solver.program.test_program import H100, fake
from tests.synthetic import instance, workload

TIGHT = SolveSettings(tighten=True)
SERVERS_AND_ONE_CONFIG = {"buy_unit": "node", "max_configs_per_pool": 1}
NODE = 8
"""gpus_per_node of an H100 SXM server (the catalog's)."""


def east(demand: float, survive: str = "none", existing: int = 0):
    """One region of 64 H100s at $2/GPU-hour bought in 8-GPU servers, one configuration
    per pool."""
    return instance(
        {"east": {H100: (64, 2.0)}},
        [workload("chat", {"east": demand})],
        survive=survive,
        existing={"east": {H100: existing}} if existing else None,
        policy=SERVERS_AND_ONE_CONFIG,
    )


def test_servers_a_step_needs_by_hand():
    # k = ceil((gpus x P - existing) / n), only where the quotient is not whole.
    assert step_servers_needed(1, 2, 0, NODE) == 1  # 2 GPUs: ceil(2 / 8) = 1
    assert step_servers_needed(1, 12, 0, NODE) == 2  # 12 GPUs: ceil(12 / 8) = 2
    assert step_servers_needed(1, 12, 2, NODE) == 2  # 12 - 2 owned: ceil(10 / 8) = 2
    assert step_servers_needed(2, 4, 0, NODE) is None  # 8 GPUs: exactly 1, the LP has it
    assert step_servers_needed(1, 2, 3, NODE) is None  # 2 - 3 owned: nothing to buy


def test_rows_written_out_by_hand():
    tp1 = fake("chat", 4.0, ladder={2: 6.0, 4: 7.0})  # 1 GPU per replica
    tp8 = fake("chat", 12.0, tp=8, ladder={2: 15.0})  # 8 GPUs per replica
    table = CandidateTable({"chat": (tp1, tp8)})
    # 20 requests/s: 3 TP1 replicas at 6.0 carry 18, 4 at 7.0 carry 28 (both steps
    # useful); one TP8 replica carries 12, two at 15.0 carry 30.
    lp = build_program(east(20.0), table, settings=TIGHT).lp
    servers = f"servers[east,{H100}]"
    for c in (tp1, tp8):
        used = f"pool_used[chat,{c.key},east]"
        for p in (2, 4) if c is tp1 else (2,):
            row = lp.constraints[f"step_needs_pool[chat,{c.key},east,{p}]"]
            assert row.coefficients == {f"pool_at_least[chat,{c.key},east,{p}]": 1.0, used: -1.0}
            assert (row.sense, row.rhs) == (Sense.LE, 0.0)
    # TP1: a step to 2 replicas uses 2 GPUs, ceil(2 / 8) = 1 server; to 4, ceil(4 / 8) = 1.
    for p in (2, 4):
        row = lp.constraints[f"step_servers[chat,{tp1.key},east,{p}]"]
        assert row.coefficients == {f"pool_at_least[chat,{tp1.key},east,{p}]": 1.0, servers: -1.0}
        assert (row.sense, row.rhs) == (Sense.LE, 0.0)
    # TP8: 2 replicas are 16 GPUs, exactly 2 servers: no rounding, no row.
    assert f"step_servers[chat,{tp8.key},east,2]" not in lp.constraints


def test_existing_gpus_lower_the_servers_a_step_needs():
    # 17 requests/s: 17 TP1 replicas alone, or 12 at 1.5 (18). A step to 12 replicas with
    # 2 H100s owned needs ceil((12 x 1 - 2) / 8) = 2 servers.
    c = fake("chat", 1.0, ladder={12: 1.5})
    inst = east(17.0, existing=2)
    lp = build_program(inst, CandidateTable({"chat": (c,)}), settings=TIGHT).lp
    row = lp.constraints[f"step_servers[chat,{c.key},east,12]"]
    assert row.coefficients[f"pool_at_least[chat,{c.key},east,12]"] == 2.0


def test_off_unless_the_settings_ask():
    table = CandidateTable({"chat": (fake("chat", 4.0, ladder={2: 6.0}),)})
    for lp in (
        build_program(east(10.0), table).lp,
        build_program(east(10.0), table, settings=SolveSettings()).lp,
    ):
        assert not [r for r in lp.constraints.values() if r.family.startswith("step_")]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    demand=st.floats(1.0, 30.0),
    alone=st.floats(0.5, 4.0),
    gains=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
    survive=st.sampled_from(["none", "replica"]),
    existing=st.sampled_from([0, 3]),
)
@example(demand=36.0, alone=0.5, gains=[0.0], survive="none", existing=0)  # 72 GPUs > 64
def test_optimum_unchanged_by_the_rows(demand, alone, gains, survive, existing):
    # Valid rows remove no integer plan, so both programs have the same optimum (gap 0).
    ladder, q = {}, alone
    for k, gain in enumerate(gains):
        q += gain
        ladder[2 ** (k + 1)] = q
    tp2 = fake("chat", 2.2 * alone, tp=2)
    table = CandidateTable({"chat": (fake("chat", alone, ladder=ladder), tp2)})
    inst = east(demand, survive=survive, existing=existing)
    results = []
    for tighten in (False, True):
        program = build_program(inst, table, settings=SolveSettings(tighten=tighten))
        results.append(get_backend("highs").solve(program.lp, mip_gap=0.0, time_limit_s=30))
    off, on = results
    assert off.termination == on.termination  # infeasible (64 GPUs too few) in both or neither
    if off.termination.has_solution:
        assert abs(off.objective - on.objective) <= 1e-6 * max(1.0, abs(off.objective))
