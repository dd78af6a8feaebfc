"""The cover built without a solver (solver.decompose.cover) and the solves that keep it
when the clock stopped every program before a plan (solver.decompose.regions.plan.covered,
solver.decompose.by_workload.optimise)."""

import time
from dataclasses import replace

import pytest

import solver.decompose.by_workload as by_workload
import solver.decompose.regions.join as region_join
import solver.decompose.regions.plan as by_region
import solver.solve as solve_module
from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.backends.base import relative_gap
from solver.candidates.table import build_candidates
from solver.decompose.cover import bounds_by_region, covering_plan
from solver.program.build import build_program
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination, plan_of
from solver.program.optimised import Method
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.solver.decompose.default_policy import EXACT
from tests.synthetic import at_policy_defaults, generated_data

TOLERANCE = 1e-6


def _one_pool(
    supply_g1: float = 64.0, supply_g2: float = 64.0, existing_g2: float = 0.0
) -> LinearProgram:
    """One pool (w, r, unified) carrying 10 requests/s, two configurations: A, one GPU of
    g1 ($100 a GPU, servers of 8) carrying 3 requests/s a replica; B, one GPU of g2
    ($120 a GPU, servers of 4, `existing_g2` owned) carrying 5. One configuration per
    pool, whole servers."""
    lp = LinearProgram("one-pool")
    served = lp.add_variable("served[none,w,r,r]")
    lp.add_constraint("demand[none,w,r]", "demand", {served: 1.0}, Sense.EQ, 10.0)
    credit = {served: -1.0}
    used = {}
    for key, gpu, per_replica, price, node, supply, existing in (
        ("A", "g1", 3.0, 100.0, 8, supply_g1, 0.0),
        ("B", "g2", 5.0, 120.0, 4, supply_g2, existing_g2),
    ):
        replicas = lp.add_variable(f"replicas[w,{key},r]", upper=64, integer=True)
        used[key] = lp.add_variable(f"pool_used[w,{key},r]", upper=1, integer=True)
        bought = lp.add_variable(f"purchased[r,{gpu}]")
        servers = lp.add_variable(f"servers[r,{gpu}]", integer=True)
        lp.add_objective({bought: price})
        credit[replicas] = per_replica
        rows = (
            ("pool_open", f"[w,{key},r]", {replicas: 1.0, used[key]: -64.0}, Sense.LE, 0.0),
            ("gpu_supply", f"[r,{gpu}]", {replicas: 1.0}, Sense.LE, supply),
            ("purchase", f"[r,{gpu}]", {bought: 1.0, replicas: -1.0}, Sense.GE, -existing),
            ("whole_servers", f"[r,{gpu}]", {bought: 1.0, servers: -node}, Sense.EQ, 0.0),
        )
        for family, index, terms, sense, rhs in rows:
            lp.add_constraint(family + index, family, terms, sense, rhs)
    lp.add_constraint("capacity[none,w,r,unified]", "capacity", credit, Sense.GE, 0.0)
    pools = {used["A"]: 1.0, used["B"]: 1.0}
    lp.add_constraint("configs_per_pool[w,r,unified]", "configs_per_pool", pools, Sense.LE, 1.0)
    return lp


def test_the_cover_of_one_pool_by_hand():
    """A needs ceil(10 / 3) = 4 replicas, 4 GPUs of g1: one server of 8, $800; B needs
    ceil(10 / 5) = 2, 2 GPUs of g2: one server of 4, 4 x $120 = $480. B it is. The bound:
    the cheapest configuration's fewest replicas, 2 x $120 = $240 (servers unrounded)."""
    lp = _one_pool()
    cover = covering_plan(lp)
    assert cover is not None and plan_of(lp, cover.values)
    assert cover.values["replicas[w,B,r]"] == 2 and cover.values["replicas[w,A,r]"] == 0
    assert cover.values["servers[r,g2]"] == 1 and cover.values["purchased[r,g2]"] == 4
    assert cover.cost == pytest.approx(480.0)
    assert cover.bound == pytest.approx(240.0)
    assert bounds_by_region(lp) == pytest.approx({"r": 240.0})


def test_the_existing_fleet_is_used_first_and_lowers_the_bound():
    """One GPU of g2 owned: B's 2 replicas need 2 - 1 = 1 more, one server of 4, $480
    still; the bound less what the owned GPU saves, 240 - 1 x 120 = $120."""
    lp = _one_pool(existing_g2=1.0)
    cover = covering_plan(lp)
    assert cover is not None and plan_of(lp, cover.values)
    assert cover.values["purchased[r,g2]"] == 4 and cover.cost == pytest.approx(480.0)
    assert cover.bound == pytest.approx(120.0)


def test_the_cover_keeps_within_the_supply_and_says_when_it_cannot():
    """g2 offers 1 GPU, B's 2 do not fit: A's 4 replicas, one server of 8 at $100 = $800.
    g1 offering 3 GPUs as well: neither fits, no cover."""
    lp = _one_pool(supply_g2=1.0)
    cover = covering_plan(lp)
    assert cover is not None and plan_of(lp, cover.values)
    assert cover.values["replicas[w,A,r]"] == 4 and cover.cost == pytest.approx(800.0)
    assert covering_plan(_one_pool(supply_g1=3.0, supply_g2=1.0)) is None


def _program(survive: str, regions: int = 3, workloads: int = 2, gpu_types: int = 2, **kw):
    data = generated_data(regions, workloads, gpu_types, survive=survive, seed=3)
    at_policy_defaults(data)
    data["solver"].update(kw)
    instance = validate_instance(data, data["name"])
    table = build_candidates(instance, EXACT)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    return instance, build_program(instance, table, sets=sets)


@pytest.mark.parametrize(("survive", "gpu_types"), [("none", 2), ("region", 1), ("zone", 2)])
def test_the_cover_is_a_plan_and_its_bound_is_below_the_optimum(survive, gpu_types):
    """A generated program at the policy's defaults: the cover holds every row and bound
    of it, costs no less than the optimum, and its bound is no higher (region loss on one
    GPU type: two take HiGHS 1.5 s to prove)."""
    _, program = _program(survive, gpu_types=gpu_types)
    cover = covering_plan(program.lp)
    assert cover is not None and plan_of(program.lp, cover.values)
    assert cover.cost == pytest.approx(program.lp.objective_value(cover.values))
    whole = get_backend("highs").run(program.lp, EXACT)
    assert cover.bound is not None
    assert cover.bound <= whole.objective * (1 + TOLERANCE) <= cover.cost * (1 + 2 * TOLERANCE)


def _every_region_stopped(monkeypatch):
    """The clock stops every region's program before a plan (a share of no time)."""
    monkeypatch.setattr(region_join, "_solved", lambda *_args: {})


def test_regions_the_clock_stopped_take_the_cover(monkeypatch):
    """No failover (no row links two regions): every region's program stopped without a
    plan, each takes the cover's columns; FEASIBLE, the gap against the cover's bound."""
    _every_region_stopped(monkeypatch)
    _, program = _program("none")
    highs = get_backend("highs")
    found = by_region.by_region(program, highs, EXACT, None, float("inf"))
    cover = covering_plan(program.lp)
    assert found is not None and found.method is Method.BY_REGION
    assert found.covered == 3 and found.result.termination is Termination.FEASIBLE
    assert plan_of(program.lp, found.result.values)
    cost = program.lp.objective_value(found.result.values)
    assert cost == pytest.approx(cover.cost)
    assert found.result.mip_gap == pytest.approx(relative_gap(cost, cover.bound))
    assert "3 of them covered without a solver" in found.result.message


def test_a_stopped_regions_bound_is_raised_to_the_covers(monkeypatch):
    """Every region's program stopped with a plan but no proof, each bounding its region
    by 0 (`stopped_bound_of`): the regions' stopped bound is the cover's, region by
    region, a valid bound (no higher than the optimum)."""
    monkeypatch.setattr(region_join, "bound_of", lambda *_args: None)
    monkeypatch.setattr(region_join, "stopped_bound_of", lambda _result: 0.0)
    _, program = _program("region", gpu_types=1)
    highs = get_backend("highs")
    found = region_join.region_join(program, highs, EXACT, None, float("inf"))
    per_region = bounds_by_region(program.lp)
    assert found.bound is None and sorted(per_region) == ["r00", "r01", "r02"]
    assert sum(per_region.values()) > 0
    total = program.lp.objective_constant + sum(per_region.values())
    assert found.stopped == pytest.approx(total)
    assert total <= highs.run(program.lp, EXACT).objective * (1 + TOLERANCE)


def test_linked_regions_the_clock_stopped_leave_the_cover_to_the_end(monkeypatch):
    """Region loss, no region's program found a plan: no floored plan, and `by_region`
    leaves the later stages (workload programs, the whole program) their chance; where
    they end without one, `covered` gives the cover, its gap against the higher of the
    regions' stopped bound (here the cover's own, region by region) and its own."""
    _every_region_stopped(monkeypatch)
    _, program = _program("region")
    highs = get_backend("highs")
    assert by_region.by_region(program, highs, EXACT, None, float("inf")) is None
    found = by_region.covered(program, highs, None, EXACT, time.monotonic())
    assert found is not None and found.method is Method.COVERED
    assert plan_of(program.lp, found.result.values)
    cover = covering_plan(program.lp)
    assert found.result.objective == pytest.approx(cover.cost)
    assert found.result.mip_gap == pytest.approx(relative_gap(cover.cost, cover.bound))


def test_the_cover_states_its_gap_against_the_regions_stopped_bound_where_higher(
    monkeypatch,
):
    """The regions' programs solved (proving nothing, as if stopped: `bound_of` None),
    each bounding its region by its objective (gap 0): that stopped bound is above the
    cover's own, and the cover's gap is stated against it."""
    monkeypatch.setattr(region_join, "bound_of", lambda *_args: None)
    _, program = _program("region", gpu_types=1)
    highs = get_backend("highs")
    stopped = region_join.region_join(program, highs, EXACT, None, float("inf")).stopped
    cover = covering_plan(program.lp)
    assert stopped is not None and cover.bound < stopped
    found = by_region.covered(program, highs, None, EXACT, time.monotonic())
    assert found.result.mip_gap == pytest.approx(relative_gap(cover.cost, stopped))


def test_a_solve_the_clock_stopped_returns_the_verified_cover(monkeypatch):
    """No failover, every region's program stopped and no time left for more
    (`_little_left`): the regions' columns are the cover's, read back and passed by the
    verifier (a rejected plan raises), FEASIBLE with its gap."""
    _every_region_stopped(monkeypatch)
    monkeypatch.setattr(by_workload, "_little_left", lambda _settings: True)
    instance, _ = _program("none")
    plan = solve_program(instance, SolveSettings.of(instance)).plan
    assert plan.status.startswith("feasible (gap ")
    assert "3 of them covered without a solver" in plan.solver.method


class _StopsIntegerPrograms:
    """HiGHS for linear programs; every integer program stopped by the clock before a
    plan (a time share of nothing)."""

    def __init__(self):
        self.inner = get_backend("highs")
        self.name = self.inner.name
        self.capabilities = self.inner.capabilities

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def run(self, lp, settings, start=None) -> SolveResult:
        if lp.is_mip():
            return SolveResult(Termination.TIME_LIMIT, self.name, "0", 0.0)
        return self.inner.run(lp, settings)


def test_failover_by_cuts_the_clock_stopped_returns_the_verified_cover(monkeypatch):
    """Region loss by Hall rows (5 regions, `scenario_rows: cuts`), every integer program
    stopped: the cut loop's integer rounds end on the cover, which must hold every
    scenario's transport problem (the loop adds the Hall rows it breaks and covers
    again), read back and passed by the verifier. Both workload parts stopped before a
    plan, so the join takes the cover's columns for both (solver.decompose.join_values)."""
    _every_region_stopped(monkeypatch)
    stops = _StopsIntegerPrograms()
    monkeypatch.setattr(solve_module, "get_backend", lambda _name: stops)
    instance, _ = _program("region", regions=5, scenario_rows="cuts")
    plan = solve_program(instance, SolveSettings.of(instance)).plan
    assert plan.status.startswith("feasible (gap ")
    method = plan.solver.method
    assert method.startswith("decomposed by workload: 2 independent programs joined, 2 of")
    assert "2 of them covered without a solver" in method
    assert "Hall rows" in method


class _Stopped:
    """A backend whose every run the clock stops before a plan."""

    name = "stopped"
    capabilities = replace(get_backend("highs").capabilities, warm_start=False)

    def version(self) -> str:
        return "0"

    def run(self, lp, settings, start=None) -> SolveResult:
        del lp, settings, start
        return SolveResult(Termination.TIME_LIMIT, self.name, "0", 0.0)


def test_a_whole_program_the_clock_stopped_falls_back_on_the_cover():
    """One workload (no region or workload decomposition): the whole program's solve
    stopped before a plan, the cover is the result, FEASIBLE with its gap."""
    _, program = _program("none", workloads=1)
    found = by_workload.optimise(program, _Stopped(), EXACT)
    assert found.method is Method.COVERED
    assert found.result.termination is Termination.FEASIBLE
    assert plan_of(program.lp, found.result.values)
    cover = covering_plan(program.lp)
    assert found.result.mip_gap == pytest.approx(relative_gap(cover.cost, cover.bound))
