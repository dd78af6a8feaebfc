"""Properties of the whole pipeline (candidates -> program -> backend -> read-back ->
verifier) over generated small instances:

- every plan the pipeline returns passes the independent verifier;
- offering one more GPU type never raises the optimal cost (every old plan is still a
  plan);
- more demand never lowers it (every plan for more demand serves less).

Solved at a zero MIP gap so that the relations hold of the optima; the cost compared is
the plan's cost, whose objective also holds a tie-break below $1/month
(`ProgramSets.tie_break_per_gpu`), hence the $1 tolerance.
"""

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from models.schema.instance import Instance
from solver.errors import Infeasible
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import instance, workload

H100, H200, B200 = "h100-sxm", "h200", "b200"
TIE_BREAK_USD = 1.0
"""Most the tie-break term can move the cost of an optimal plan, $/month."""


@st.composite
def small_instances(draw) -> dict:
    """Arguments of a small instance: one or two regions, one or two GPU types, one
    workload of llama-3.1-8b, a failure policy."""
    regions = ["east", "west"][: draw(st.integers(1, 2))]
    survive = draw(
        st.sampled_from(["none", "replica", "zone"] + (["region"] if len(regions) == 2 else []))
    )
    gpus = draw(st.sampled_from([[H100], [H200], [H100, H200]]))
    supply = {r: {g: (64, round(draw(st.floats(1.5, 4.0)), 2)) for g in gpus} for r in regions}
    demand = {r: round(draw(st.floats(1.0, 25.0)), 1) for r in regions}
    return {
        "supply": supply,
        "demand": demand,
        "survive": survive,
        "zones": 3 if survive == "zone" else 1,
    }


def build(args: dict, demand_scale: float = 1.0, extra_gpu: str | None = None) -> Instance:
    supply = {r: dict(offers) for r, offers in args["supply"].items()}
    if extra_gpu:
        for offers in supply.values():
            offers.setdefault(extra_gpu, (64, 5.0))
    return instance(
        supply,
        [
            workload(
                "chat",
                {r: rate * demand_scale for r, rate in args["demand"].items()},
                max_failover_rtt_ms=100,
            )
        ],
        links=[("east", "west", 40)] if len(supply) == 2 else [],
        survive=args["survive"],
        zones=args["zones"],
        mip_gap=0.0,
    )


def cost(inst: Instance) -> float | None:
    """The optimal cost per month, None when no plan exists; the plan must verify."""
    try:
        plan = solve(inst)
    except Infeasible:
        return None
    check = verify(inst, plan)
    assert check.ok, check.violations
    assert plan.cost_per_month == pytest.approx(check.cost_per_month, abs=0.01)
    return plan.cost_per_month


PROPERTY = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(args=small_instances())
def test_another_gpu_type_never_raises_the_cost(args):
    base = cost(build(args))
    assume(base is not None)
    wider = cost(build(args, extra_gpu=B200))
    assert wider is not None, "offering more GPUs made the instance infeasible"
    assert wider <= base + TIE_BREAK_USD


@PROPERTY
@given(args=small_instances(), scale=st.floats(1.0, 2.0))
def test_more_demand_never_lowers_the_cost(args, scale):
    base = cost(build(args))
    assume(base is not None)
    more = cost(build(args, demand_scale=scale))
    assert more is None or more >= base - TIE_BREAK_USD
