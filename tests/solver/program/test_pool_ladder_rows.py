"""pool_ladder (solver.program.families.pooling): its rows written out by hand on a tiny
program, absent where pool_used is, and (hypothesis, HiGHS) the optimum of small programs
unchanged by them."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.table import CandidateTable
from solver.program.build import build_program, with_bounds
from solver.program.lp import Sense
from tests.solver.program.test_program import H100, fake
from tests.synthetic import instance, workload


def east(demand: float, survive: str = "none", configs: int | None = 1):
    """One region of 64 H100s at $2/GPU-hour; `configs`: policy.max_configs_per_pool."""
    return instance(
        {"east": {H100: (64, 2.0)}},
        [workload("chat", {"east": demand})],
        survive=survive,
        policy={"max_configs_per_pool": configs},
    )


def test_rows_written_out_by_hand():
    c = fake("chat", 4.0, ladder={2: 6.0, 4: 7.0})
    # 20 requests/s: 3 replicas at 6.0 carry 18, 4 at 7.0 carry 28 (both steps useful).
    lp = build_program(east(20.0), CandidateTable({"chat": (c,)})).lp
    at_least = f"pool_at_least[chat,{c.key},east,{{}}]".format
    # step 2 sits on pool_used, step 4 on step 2
    for step, below in ((2, f"pool_used[chat,{c.key},east]"), (4, at_least(2))):
        row = lp.constraints[f"pool_ladder[chat,{c.key},east,{step}]"]
        assert row.coefficients == {at_least(step): 1.0, below: -1.0}
        assert (row.sense, row.rhs) == (Sense.LE, 0.0)


def test_absent_without_pool_used():
    # survive: none and no limit on configurations: no pool_used, no ladder
    table = CandidateTable({"chat": (fake("chat", 4.0, ladder={2: 6.0, 4: 7.0}),)})
    lp = build_program(east(20.0, configs=None), table).lp
    assert not [name for name in lp.variables if name.startswith("pool_used[")]
    assert not [r for r in lp.constraints.values() if r.family == "pool_ladder"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    demand=st.floats(1.0, 30.0),
    alone=st.floats(0.5, 4.0),
    gains=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
    survive=st.sampled_from(["none", "replica"]),
)
def test_optimum_unchanged_by_the_ladder(demand, alone, gains, survive):
    # The rows cut only plans with a twin of the same cost (the docstring's proof): the
    # optimum (gap 0) is the same with them and without; and the first rung holds on the
    # plan found without them (every integer plan satisfies it).
    ladder, q = {}, alone
    for k, gain in enumerate(gains):
        q += gain
        ladder[2 ** (k + 1)] = q
    table = CandidateTable(
        {"chat": (fake("chat", alone, ladder=ladder), fake("chat", 2.2 * alone, tp=2))}
    )
    laddered = build_program(east(demand, survive=survive), table).lp
    bare = with_bounds(laddered, {})
    bare.constraints = {n: r for n, r in bare.constraints.items() if r.family != "pool_ladder"}
    highs = get_backend("highs")
    on, off = (highs.solve(lp, mip_gap=0.0, time_limit_s=30) for lp in (laddered, bare))
    assert off.termination == on.termination
    if not off.termination.has_solution:
        return
    assert abs(off.objective - on.objective) <= 1e-6 * max(1.0, abs(off.objective))
    for row in laddered.constraints.values():
        if row.family != "pool_ladder":
            continue
        first, below = row.coefficients
        if below.startswith("pool_used["):
            assert off.values.get(first, 0.0) <= off.values.get(below, 0.0) + 1e-6
