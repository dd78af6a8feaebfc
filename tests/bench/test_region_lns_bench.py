"""The search over pairs of regions after the regions' join (solver.decompose.regions.search),
before and after, side by side in one run. Run by `make bench` only (not `make test`).

Each generated instance surviving any region loss at the policy's defaults (whole
servers, one configuration per pool; tests.synthetic.generated_data: per-region random
prices) is solved twice through `solve_program` in this process: `before`, the regions'
programs and the plan floored at their fleets, then the whole program from that plan
(`SEARCH` off in solver.decompose.regions.plan); `after`, the same with the search
between the floored plan and the whole program. The table prints, for each, the
regions' stage (the plan `by_region` returns: wall time from the start of
`solve_program`, cost, gap to the regions' bound) and the verified plan (wall, cost,
gap, status). On the 5 x 5 x 3 seeds the whole program proves its plan optimal: the
last column says whether the regions' stage already had that cost within the gap.
"""

import time

import pytest

import solver.decompose.by_workload as by_workload
import solver.decompose.regions.plan as by_region
from models.io.loading import validate_instance
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

SIZES = [(10, 20, 6, 0), (5, 5, 3, 1), (5, 5, 3, 2), (5, 5, 3, 3)]
"""(regions, workloads, GPU types, seed), all surviving a region loss."""
TIME_LIMIT_S = 120.0
MIP_GAP = 1e-3
ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = (
        "instance",
        "search",
        "regions' stage s",
        "stage cost $/month",
        "stage gap",
        "wall s",
        "cost $/month",
        "gap",
        "status",
        "stage = plan",
    )
    title = f"region LNS: before vs after (highs, {MIP_GAP:.1%} gap, limit {TIME_LIMIT_S:g} s)"
    print_table(title, header, ROWS)


def _instance(size: tuple[int, int, int, int]):
    data = generated_data(*size[:3], survive="region", seed=size[3])
    at_policy_defaults(data)
    data["name"] += f"-seed{size[3]}-default-policy"
    return validate_instance(data, data["name"])


def _solve(inst, settings: SolveSettings, monkeypatch) -> tuple:
    """(regions' stage: wall s, cost, gap; the plan; its wall s) of one solve."""
    stage: list[tuple[float, float | None, float | None]] = []
    started = time.perf_counter()

    def recorded(*args, **kwargs):
        joined = by_region.by_region(*args, **kwargs)
        if joined is not None and not stage:
            result = joined.result
            stage.append((time.perf_counter() - started, result.objective, result.mip_gap))
        return joined

    monkeypatch.setattr(by_workload, "by_region", recorded)
    plan = solve_program(inst, settings).plan
    return (stage[0] if stage else (None, None, None)), plan, time.perf_counter() - started


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s[:3])) + f"-seed{s[3]}")
def test_search_before_and_after(size, monkeypatch):
    inst = _instance(size)
    label = " x ".join(map(str, size[:3])) + f", seed {size[3]}"
    settings = SolveSettings.of(inst, time_limit_s=TIME_LIMIT_S, mip_gap=MIP_GAP)
    for name, search in (("before", False), ("after", True)):
        monkeypatch.setattr(by_region, "SEARCH", search)
        monkeypatch.setattr(by_region, "SEARCH_MIN_REGIONS", 0)  # 5 x 5 x 3 searched too
        try:
            (at, cost, gap), plan, wall_s = _solve(inst, settings, monkeypatch)
        except NoSolution as stopped:
            ROWS.append((label, name, *["-"] * 7, str(stopped)))
            continue
        same = "-"
        if cost is not None and plan.status.startswith("optimal"):
            same = "yes" if cost <= plan.cost_per_month * (1 + MIP_GAP) else "no"
        ROWS.append(
            (
                label,
                name,
                "-" if at is None else f"{at:.2f}",
                "-" if cost is None else f"{cost:,.0f}",
                "-" if gap is None else f"{gap:.3%}",
                f"{wall_s:.2f}",
                f"{plan.cost_per_month:,.0f}",
                "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}",
                plan.status.split()[0],
                same,
            )
        )
        assert plan.cost_per_month > 0


LOADED = (5, 5, 3, 1)
"""The instance solved beside busy loops (the search runs on 5 regions here)."""
UNREACHED_S = 1200.0


def _busy() -> None:
    """One core's worth of load until killed."""
    while True:
        pass


def _first_kept(seen: list):
    """by_region, keeping the first plan it returns in `seen`."""

    def recorded(*args, **kwargs):
        joined = by_region.by_region(*args, **kwargs)
        if joined is not None and not seen:
            seen.append(joined)
        return joined

    return recorded


def test_the_search_gives_the_same_plan_under_load(monkeypatch):
    """The regions' stage (the plan the search returns) of one instance, solved at the
    machine's load and then beside two busy-loop processes (both of a 2-core machine's
    cores taken): the same cost and the same values. The search's neighbourhoods stop at
    a node count and its batches do not depend on idle cores (solver.decompose.regions.search);
    before, a 3 s wall limit and one pair per idle core made the plan follow the load."""
    import multiprocessing

    inst = _instance(LOADED)
    # a limit the search never reaches: where it cuts the search, the plan depends on
    # the machine (and says so: Searched.stopped)
    settings = SolveSettings.of(inst, time_limit_s=UNREACHED_S, mip_gap=MIP_GAP)
    monkeypatch.setattr(by_region, "SEARCH_MIN_REGIONS", 0)
    stages = []
    for loaded in (False, True):
        busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(2 * loaded)]
        for process in busy:
            process.start()
        seen: list = []
        monkeypatch.setattr(by_workload, "by_region", _first_kept(seen))
        try:
            solve_program(inst, settings)
        finally:
            for process in busy:
                process.kill()
        assert seen, "the regions' stage returned no plan"
        stages.append(seen[0])
    idle, loaded = stages
    assert not idle.search_stopped and not loaded.search_stopped
    print(
        f"\nunder load: {idle.result.objective:,.2f} idle, {loaded.result.objective:,.2f} loaded;"
        f" {idle.searched} and {loaded.searched} neighbourhoods"
    )
    assert loaded.result.objective == idle.result.objective
    assert loaded.searched == idle.searched
    assert loaded.result.values == idle.result.values
