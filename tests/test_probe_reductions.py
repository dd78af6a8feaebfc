"""Properties of the solver's reductions and bounds over small random instances unlike
the shipped ones: whole servers and single GPUs, region and zone loss, disaggregation,
fp8 and bf16 with and without one precision per workload, speculative decoding,
pipeline stages, an existing fleet and a site power cap.

    config dominance (solver.candidates.config_dominance): the program's optimum with
        the pools it removes bounded at 0 equals the optimum without the bounds, and so
        does the whole reduction the solve uses (solver.candidates.swap_dominance
        .reduced_program: swap, config and same-GPU dominance with the sizes left);
    cut rows (solver.decompose.scenario_cuts): the sum of the workloads' LP relaxations
        with their Hall rows, the bound a plan's gap is stated against, is at most the
        routing program's optimum.

Both programs are solved at mip_gap 0; an example whose solve does not end optimal
(infeasible, say: the power cap) says nothing and is set aside."""

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.candidates.config_dominance import config_bounds
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import build_candidates
from solver.decompose.scenario_cuts import _lp_rounds
from solver.program.build import build_program, with_bounds
from solver.program.families.hall import TransportCredit, add_hall_row, seed_cuts
from solver.program.lp import Termination
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.synthetic import at_policy_defaults, generated_data

SLOW = [HealthCheck.too_slow, HealthCheck.filter_too_much]
"""Each example builds and solves programs; some say nothing (no pool removed, no plan)."""
SPECULATION = {"name": "eagle3", "draft_cost_ratio": 0.05, "tokens": 4, "acceptance_rate": 0.75}


@st.composite
def instances(draw, survive: tuple[str, ...] = ("none", "region", "zone"), removable=False):
    """A generated instance at the policy's defaults (whole servers, one configuration
    per pool) with some features switched on. `removable`: speculation, one precision
    per workload and pipeline stages always on, the three without which config dominance
    removes no pool of these instances (none of 63 drawn without the first two had one,
    nor any of 14 drawn with them but without stages, where 11 of 11 with stages had:
    each was built, up to 4 s with speculation, and thrown away by the test's assume,
    3 of every 6 examples drawn, 0.5 s each)."""
    kind = draw(st.sampled_from(survive))
    seed = draw(st.integers(0, 10_000))
    data = at_policy_defaults(generated_data(draw(st.sampled_from([2, 3])), 1, 2, kind, seed))
    policy, regions = data["policy"], data["regions"]
    if draw(st.booleans()):
        policy |= {"buy_unit": "gpu", "max_configs_per_pool": 1}
    policy["disaggregation"] = draw(st.booleans())
    policy["one_precision_per_workload"] = removable or draw(st.booleans())
    if removable or draw(st.booleans()):
        policy["speculative"] = [SPECULATION]
    if removable or draw(st.booleans()):
        policy["pipeline_parallel"] = [1, 2]
    rng = random.Random(seed)
    if draw(st.booleans()):
        region = rng.choice(regions)
        region["existing"] = {next(iter(region["supply"])): draw(st.sampled_from([8, 16]))}
    if draw(st.booleans()):
        rng.choice(regions)["power_kw"] = draw(st.sampled_from([80, 200]))
    return validate_instance(data, data["name"])


def _settings(instance):
    return SolveSettings.of(instance, mip_gap=0.0, time_limit_s=60).started().with_duals(False)


@settings(max_examples=3, deadline=None, suppress_health_check=SLOW)
@given(instance=instances(survive=("none", "region"), removable=True))  # zone loss: none removed
def test_config_dominance_keeps_the_optimum(instance):
    program = build_program(instance, build_candidates(instance))
    bounds = config_bounds(program)
    assume(bounds)
    backend = get_backend("highs")
    free = backend.run(program.lp, _settings(instance))
    assume(free.termination is Termination.OPTIMAL)
    bounded = backend.run(with_bounds(program.lp, bounds), _settings(instance))
    assert bounded.termination is Termination.OPTIMAL, (bounds, bounded.termination)
    assert bounded.objective == pytest.approx(free.objective, rel=1e-6), bounds


@settings(max_examples=3, deadline=None, suppress_health_check=SLOW)
@given(instance=instances(survive=("region", "zone")))
def test_the_cut_rounds_lp_bound_is_below_the_routing_optimum(instance):
    table, backend = build_candidates(instance), get_backend("highs")
    scenarios = failure_scenarios(instance)
    cuts = build_program(
        instance, table, sets=ProgramSets(instance, table, scenarios, scenario_rows="cuts")
    )
    credit = TransportCredit(cuts.sets)
    for cut in seed_cuts(cuts.sets):
        add_hall_row(cuts.lp, credit, cut)
    _, _, infeasible, bound = _lp_rounds(cuts, backend, _settings(instance), credit, {})
    assume(infeasible is None and bound is not None)
    routing = build_program(
        instance, table, sets=ProgramSets(instance, table, scenarios, scenario_rows="routing")
    )
    optimum = backend.run(routing.lp, _settings(instance))
    assume(optimum.termination is Termination.OPTIMAL)
    assert bound <= optimum.objective * (1 + 1e-9) + 1e-6


@settings(max_examples=2, deadline=None, suppress_health_check=SLOW)
@given(instance=instances())
def test_the_whole_reduction_keeps_the_optimum(instance):
    program = build_program(instance, build_candidates(instance))
    backend = get_backend("highs")
    free = backend.run(program.lp, _settings(instance))
    assume(free.termination is Termination.OPTIMAL)
    reduced = backend.run(reduced_program(program), _settings(instance))
    assert reduced.termination is Termination.OPTIMAL
    assert reduced.objective == pytest.approx(free.objective, rel=1e-6)
