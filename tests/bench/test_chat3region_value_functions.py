"""chat-3region by each region's value function and a master over the Hall rows (issue 33:
the default instance proven optimal in under 1 s of solve). Run by `make bench` only (not
`make test`). An exact method, measured and not kept: it proves the same optimum with more
HiGHS work than today's solve, not less (the table below).

The reformulation. In chat-3region every failover scenario's capacity rows of a region r
are the same rows (tests below: `test_failover_rows_agree`): a scenario's credits depend on
the longest round trip of the users it may reroute to r (solver.decompose.scenario_cuts),
and with `max_failover_rtt_ms: 100` us-west and eu-west fail over only to us-east (their
140 ms link is too long), so r's rows take one form with no rerouting (`none`) and one in
every scenario that loses a region (the decode rows, which no round trip shortens, are
the same in all three). A request served in r has its prefill and its decode in r (a
serving mode's one load column sits in the capacity rows of both its pools), and nothing
but the loss scenarios' demand rows names two regions (the same test), so r's load in a
scenario is one number. Whatever r must carry in any loss scenario, its fleet carries it
iff it carries the largest such load c_r, so its cost is a function of c_r alone:

    f_r(c) = min  cost_r(x)  over r's own program (its `none` rows and demand as they are)
                             with one loss scenario's rows carrying a load of c

a monotone step function. The scenarios' transport problems are feasible iff the Hall
rows hold on the vector c (for each loss scenario and set U of its users: their demand
<= the sum of c_r over the regions their routes reach), so

    optimum  =  min  sum_r f_r(c_r)   s.t.  the Hall rows on c.

Exact both ways: a plan's fleets give c_r = the largest load r carries, each region's
part a plan of f_r's program; and region plans at the f_r minima with c on the Hall rows
serve every scenario (a flow exists; a load below c_r fits where c_r does). On
chat-3region (D = 92.59 + 37.04 + 30 = 159.63 requests/s, derived here from the demand
rows, not assumed): c_W + c_U >= D, c_E + c_U >= D, c_E + c_W >= D (the survivors of each
loss carry everyone), c_W >= 37.04 and c_E >= 37.04 (us-west's users when us-east or
us-west is lost: one region reaches them), c_U >= 30 (eu-west's when us-east is lost).

The walk. Each f_r is walked over its range by pairs of region MIPs (HiGHS, one thread,
gap 0): the least cost a at the load c, then the largest load g any plan of cost below
floor(a) + $1 carries (the tie-break on replicas moves costs by cents; grouping to whole
dollars keeps a level's plans together, and the master's cost is then low by under $1 a
region at most); the next level starts just above g. The master picks one level per
region with the Hall rows on the levels' largest loads: a few thousand products.

Measured on the shared 2-core machine at load 11-12, side by side in one run
(2026-12-06; a first run at load 8-10 gave the same levels and MIPs, 43.5 s):

| region | levels up to c = D | region MIPs | nodes | HiGHS CPU | levels a B&B walks |
|---|---|---|---|---|---|
| eu-west | 18 | 36 | 666 | 15.5 s | 12 |
| us-east | 10 | 20 | 397 | 6.9 s | 10 |
| us-west | 19 | 38 | 672 | 21.3 s | 14 |

| method | cost | wall | CPU |
|---|---|---|---|
| value functions + master | $236,520.06 | 135.5 s | 43.8 s |
| today's `optimise` (region rows, warm start, whole search) | $236,520.06 | 25.5 s | 6.4 s |

The master picks eu-west's $82,344 level (80.2 requests/s), us-east's first, $78,256
(87.3 in a loss; its own 92.6 in `none` is what sets it) and us-west's $75,920 (84.1):
the whole program's optimum, so the reformulation is exact, and 7x dearer in CPU than
today's solve. A branch and bound over regions cannot skip much of the walk: with the
cheap bound a_r + sum_{s != r} f_s(lowest c_s) a level is pruned only when it alone leaves
less than the optimum less the others' least costs ($236,520 - $78,256 - $32,704 for
us-west: levels up to $125,560), so 36 of the 47 levels stay to walk (last column), about
72 region MIPs at 0.1-0.5 s each idle, against one whole search of 354 nodes (3.3 s
idle, last stop). The f_r would need to come from something far cheaper than a MIP per
level to beat it, such as a knapsack over each region's pool ladders and server counts
exact to the program's credit rows (22-34 configurations a region after config
dominance, five pools, two or three GPU types); that was not built.
"""

import itertools
import math
import time
from collections import defaultdict

import pytest

from models.io.loading import load_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.backends.base import compile_program
from solver.backends.highs import _new_highs, highs_lp
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import build_candidates
from solver.decompose.by_workload import optimise
from solver.decompose.region_bounds import region_programs
from solver.program.build import build_program
from solver.program.families.variables import ModeLoadColumn
from solver.program.lp import Constraint, LinearProgram, Sense, Variable
from solver.program.row_names import split_name
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.bench.tables import print_table
from tests.paths import INSTANCES as INSTANCE_FOLDER

INSTANCE = "chat-3region"
LOAD = "load"
"""The value program's column: the load its loss scenario carries."""
SNAP = 1.0
"""Dollars a level's budget is grouped to (the tie-break on replicas moves costs by cents)."""
MIP_LIMIT_S = 60.0
SCENARIO_FAMILIES = ("served", "capacity", "mode_split", "demand")


@pytest.fixture(scope="module")
def built():
    instance = load_instance(INSTANCE_FOLDER / f"{INSTANCE}.yaml")
    settings = SolveSettings.of(instance)
    table = build_candidates(instance, settings)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    program = build_program(instance, table, settings=settings, sets=sets)
    return program, settings


def _scenario(name: str) -> str | None:
    """The scenario a column or row belongs to (None: the fleet's, every scenario's)."""
    family, index = split_name(name)
    if family in SCENARIO_FAMILIES or ModeLoadColumn.owns(family):
        return index[0]
    return None


def _fleet_terms(row: Constraint) -> tuple:
    """A row's terms on the fleet's columns (its scenario's load columns left out)."""
    return tuple(
        sorted(
            (name, round(coef, 9))
            for name, coef in row.coefficients.items()
            if _scenario(name) is None
        )
    )


def _loss_scenarios(lp: LinearProgram, region: str) -> list[str]:
    own = region_programs(lp)[region]
    return sorted({_scenario(name) for name in own.variables} - {None, "none"})


def test_failover_rows_agree(built):
    """Each region's capacity rows are the same rows in every loss scenario it serves in,
    and nothing but loss scenarios' demand rows names two regions: the conditions under
    which a region's cost depends on one load c alone."""
    lp = reduced_program(built[0])
    own = {name for program in region_programs(lp).values() for name in program.constraints}
    linking = {split_name(name)[0] for name in lp.constraints if name not in own}
    assert linking == {"demand"}
    forms = defaultdict(set)
    for name, row in lp.constraints.items():
        family, index = split_name(name)
        if family == "capacity" and index[0] != "none":
            _, _, region, phase = index
            forms[(region, phase)].add((_fleet_terms(row), row.sense, row.rhs))
    assert forms and all(len(kinds) == 1 for kinds in forms.values())


def value_program(lp: LinearProgram, region: str) -> LinearProgram:
    """f_r's program (the module docstring): `region`'s own program with its `none`
    scenario as it is and one loss scenario's rows carrying `LOAD`; the other loss
    scenarios (the same rows) and that scenario's demand rows left out."""
    own = region_programs(lp)[region]
    first = _loss_scenarios(lp, region)[0]
    kept = {name for name in own.variables if _scenario(name) in (None, "none", first)}
    value = LinearProgram(f"{lp.name}@{region}:value")
    value.variables = {name: own.variables[name] for name in own.variables if name in kept}
    value.variables[LOAD] = Variable(LOAD)
    value.constraints = {
        name: row
        for name, row in own.constraints.items()
        if row.coefficients.keys() <= kept
        and not (_scenario(name) == first and split_name(name)[0] == "demand")
    }
    served = [n for n in kept if split_name(n)[0] == "served" and _scenario(n) == first]
    terms = {**dict.fromkeys(served, 1.0), LOAD: -1.0}
    value.constraints["load_carried"] = Constraint("load_carried", "load", terms, Sense.EQ, 0.0)
    value.objective = dict(own.objective)
    return value


class Walk:
    """f_r's levels by pairs of MIPs on one HiGHS model: the least cost at a load, the
    largest load within a budget (a row on the cost, free when not asked)."""

    def __init__(self, program: LinearProgram):
        import numpy as np

        self.np = np
        self.compiled = compile_program(program)
        self.load = self.compiled.variable_names.index(LOAD)
        self.cost = np.array(self.compiled.cost)
        self.highs = _new_highs()
        for option, value in (
            ("threads", 1),
            ("mip_rel_gap", 0.0),
            ("mip_abs_gap", 1e-7),
            ("time_limit", MIP_LIMIT_S),
        ):
            self.highs.setOptionValue(option, value)
        self.highs.passModel(highs_lp(self.compiled))
        priced = np.flatnonzero(self.cost).astype(np.int32)
        self.highs.addRow(-math.inf, math.inf, len(priced), priced, self.cost[priced])
        self.budget = self.highs.getNumRow() - 1
        self.mips, self.nodes, self.cpu_s = 0, 0, 0.0

    def _run(self, cost, load: float, budget: float) -> float:
        columns = self.np.arange(len(cost), dtype=self.np.int32)
        self.highs.changeColsCost(len(cost), columns, cost)
        self.highs.changeColBounds(self.load, load, math.inf)
        self.highs.changeRowBounds(self.budget, -math.inf, budget)
        started = time.process_time()
        self.highs.run()
        self.cpu_s += time.process_time() - started
        info = self.highs.getInfo()
        self.mips += 1
        self.nodes += info.mip_node_count
        assert str(self.highs.getModelStatus()).endswith("kOptimal")
        return info.objective_function_value

    def level(self, load: float) -> tuple[float, float]:
        """(f_r(load), the largest load a plan of that cost, to the dollar, carries)."""
        constant = self.compiled.objective_constant
        cost = self._run(self.cost, load, math.inf) + constant
        most = self.np.zeros(len(self.cost))
        most[self.load] = -1.0
        budget = math.floor(cost / SNAP) * SNAP + SNAP - 1e-6
        return cost, -self._run(most, load, budget - constant)


def hall_rows(lp: LinearProgram) -> dict[frozenset, float]:
    """For each set S of regions: the most demand some loss scenario's users reach only
    in S (Hall's condition on c: sum_{r in S} c_r >= it)."""
    users = defaultdict(list)
    for name, row in lp.constraints.items():
        family, index = split_name(name)
        if family == "demand" and index[0] != "none":
            reach = frozenset(split_name(s)[1][3] for s in row.coefficients)
            users[index[0]].append((row.rhs, reach))
    rows: dict[frozenset, float] = {}
    for scenario in users.values():
        for k in range(1, len(scenario) + 1):
            for group in itertools.combinations(scenario, k):
                reach = frozenset().union(*(r for _, r in group))
                rows[reach] = max(rows.get(reach, 0.0), sum(d for d, _ in group))
    return rows


def master(levels: dict[str, list], rows: dict[frozenset, float]) -> tuple[float, dict]:
    """The cheapest choice of one level per region whose largest loads meet the Hall rows."""
    regions = sorted(levels)
    best = (math.inf, {})
    for choice in itertools.product(*(levels[r] for r in regions)):
        chosen = dict(zip(regions, choice, strict=True))
        cost = sum(a for a, _ in choice)
        meets = all(sum(chosen[r][1] for r in s) >= d - 1e-6 for s, d in rows.items())
        if cost < best[0] and meets:
            best = (cost, chosen)
    return best


def test_value_function_master(built):
    """Walk each f_r over its range, solve the master, and today's `optimise` beside it:
    the same optimum (within the instance's gap), and what each costs."""
    program, settings = built
    lp = reduced_program(program)
    rows = hall_rows(lp)
    regions = sorted({r for s in rows for r in s})
    lowest = {r: rows.get(frozenset({r}), 0.0) for r in regions}
    highest = {r: max(d for s, d in rows.items() if r in s) for r in regions}

    wall, cpu = time.perf_counter(), time.process_time()
    levels, walks = {}, {}
    for region in regions:
        walk = walks[region] = Walk(value_program(lp, region))
        found, load = [], lowest[region] - 1e-6
        while True:
            cost, most = walk.level(load)
            found.append((cost, most))
            if most >= highest[region]:
                break
            load = most + 1e-4
        levels[region] = found
    optimum, chosen = master(levels, rows)
    walk_wall, walk_cpu = time.perf_counter() - wall, time.process_time() - cpu

    wall, cpu = time.perf_counter(), time.process_time()
    today = optimise(program, get_backend(settings.backend), settings.started()).result
    today_wall, today_cpu = time.perf_counter() - wall, time.process_time() - cpu

    print_table(
        "chat-3region: each region's levels (cost $/month, largest load requests/s)",
        ("region", "levels"),
        [(r, ", ".join(f"${a:,.0f}: {g:.1f}" for a, g in levels[r])) for r in regions],
    )
    least = {r: levels[r][0][0] for r in regions}
    to_walk = {
        r: sum(a + sum(least[s] for s in regions if s != r) < optimum for a, _ in levels[r])
        for r in regions
    }
    print_table(
        "the walk per region (HiGHS, one thread, gap 0)",
        ("region", "levels", "MIPs", "nodes", "HiGHS CPU s", "levels a B&B walks"),
        [
            (r, len(levels[r]), w.mips, w.nodes, f"{w.cpu_s:.2f}", to_walk[r])
            for r, w in walks.items()
        ],
    )
    print_table(
        "side by side, one run",
        ("method", "cost $/month", "wall s", "CPU s"),
        [
            (method, f"{cost:,.2f}", f"{wall_s:.1f}", f"{cpu_s:.1f}")
            for method, cost, wall_s, cpu_s in (
                ("value functions + master", optimum, walk_wall, walk_cpu),
                ("today's optimise", today.objective, today_wall, today_cpu),
            )
        ],
    )
    print("master's choice:", {r: (round(a), round(g, 2)) for r, (a, g) in chosen.items()})
    # The master's levels are grouped to the dollar (SNAP): low by under $1 a region at most.
    assert today.objective - len(regions) * SNAP <= optimum * (1 + settings.mip_gap)
    assert optimum <= today.objective * (1 + settings.mip_gap)
