"""Why an instance has no plan: pre-solve checks and an elastic re-solve.

Pre-solve checks run on the program's sets before any solver is called and collect
every problem at once, each with its numbers and a remedy:

- a region with demand for a workload that it cannot host at all (in `none` users are
  served in their own region);
- for every scenario and workload, a max-flow on the routes the latency policy allows,
  with each region's capacity bounded above by all of its supply running the workload's
  best configuration per GPU (a disaggregated request is counted as if one phase were
  the whole request, so the bound only over-estimates). Demand beyond that flow cannot
  be served by any plan.

- over a horizon of months (`horizon_problems`), the first month whose grown demand needs
  more kW than the regions' power (and their supply) holds, each workload on its most
  efficient GPU offered (requests/s per kW at its best configuration's ceiling), found
  before month 0 is solved rather than when the month-by-month solve reaches it.

All are necessary conditions only; workloads competing for the same supply are caught
by the elastic re-solve: the program built with `elastic=True` (solver.program.elastic), which
has priced slack unserved[f,w,o] in every demand row and extra_gpus[r,g] in every
gpu_supply row and is always feasible. Its slack names the requirements in conflict and
how far apart they are ("needs 112 b200 in us-east, 64 available"), with the scenario
that asks for them.
"""

import math
from collections import defaultdict
from collections.abc import Callable
from functools import partial

from models.operations.procurement import month_factors
from models.operations.scenarios import Scenario, ScenarioKind
from models.operations.site import gpu_kw, node_gpus
from models.operations.slo import zone_loss_overprovision_factor
from models.schema.quantities import counted
from solver.backends import Backend
from solver.errors import Diagnosis, Problem
from solver.program.build import FleetProgram, build_program, with_bounds
from solver.program.families.demand import UnservedColumn
from solver.program.families.power import site_conflicts
from solver.program.families.supply import ExtraGpusColumn
from solver.program.families.variables import ServedColumn
from solver.program.lp import LinearProgram, Termination
from solver.program.row_names import DemandRow, GpuSupplyRow
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings


def presolve_problems(sets: ProgramSets) -> list[Problem]:
    """Every requirement no plan can meet, found without a solver."""
    problems = _unhosted_demand(sets)
    if all(key in sets.modes for key in sets.demand):
        problems += _unroutable_demand(sets)
    return problems


def _unhosted_demand(sets: ProgramSets) -> list[Problem]:
    problems = []
    for (w, o), rate in sets.demand.items():
        if (w, o) in sets.modes or not sets.table.of(w):
            continue  # hosted, or no configuration at all (a problem of its own)
        offered = sorted(g for (r, g) in sets.offers if r == o)
        gpus = sorted({c.gpu for c in sets.table.of(w)})
        empty = [g for g in offered if usable_gpus(sets, o, g) == 0]
        if not offered:
            why = f"{o} offers no GPU at all"
        elif empty == offered:  # offered on paper: max_gpus 0 (or under a server), none owned
            why = f"{o} has no GPU to place a replica on: " + ", ".join(
                _why_empty(sets, o, g) for g in empty
            )
            server = node_gpus(sets.instance, empty[0])
            part = server > 1 and sets.offers[(o, empty[0])].max_gpus > 0  # under a server
            least = f"to {server} (one whole server)" if part else "above 0"
            problems.append(
                Problem(
                    DemandRow("none", w, o).name(),
                    f"{rate:.1f} requests/s of {w} in {o} must be served there, but {why}",
                    f"raise regions[{o}].supply.{empty[0]}.max_gpus {least}"
                    + (", or set policy.buy_unit: gpu" if part else "")
                    + ", or drop its demand",
                )
            )
            continue
        short = _too_few_for_a_replica(sets, w, o, [g for g in offered if g in gpus])
        if short:  # configurations exist on an offered GPU; none fits the GPUs there
            g, need = short[0]
            problems.append(
                Problem(
                    DemandRow("none", w, o).name(),
                    f"{rate:.1f} requests/s of {w} in {o} must be served there, but {o} "
                    f"holds no replica of {w}: "
                    + "; ".join(
                        f"{gpu} has {counted(sets.offers[(o, gpu)].available, 'GPU')} to "
                        f"place (max_gpus plus those owned), {w}'s smallest replica on it "
                        f"needs {counted(least, 'GPU')}"
                        for gpu, least in short
                    ),
                    _either(
                        [
                            f"raise regions[{o}].supply.{g}.max_gpus to {need}",
                            _smaller_replicas(sets, need),
                            "drop its demand",
                        ]
                    ),
                )
            )
            continue
        if offered:
            why = (
                f"{o} offers {', '.join(offered)}, and no configuration of {w} runs on "
                f"{'it' if len(offered) == 1 else 'them'} (configurations exist on "
                f"{', '.join(gpus) or 'no GPU'})"
            )
        problems.append(
            Problem(
                DemandRow("none", w, o).name(),
                f"{rate:.1f} requests/s of {w} in {o} must be served there, but {why}",
                f"offer {' or '.join(gpus) or 'a suitable GPU'} in {o}, or drop its demand",
            )
        )
    return problems


def _too_few_for_a_replica(
    sets: ProgramSets, w: str, o: str, runs_on: list[str]
) -> list[tuple[str, int]]:
    """(GPU, the GPUs of w's smallest replica on it) for each GPU of `runs_on` (offered in
    o, with configurations of w) whose supply in o holds less than that replica; empty
    unless every one of them falls short (else the cause is another: a disaggregated
    pair with one role only)."""
    short = []
    for g in runs_on:
        need = min(c.gpus for c in sets.table.of(w) if c.gpu == g)
        if sets.offers[(o, g)].available < need:
            short.append((g, need))
    return short if runs_on and len(short) == len(runs_on) else []


def _smaller_replicas(sets: ProgramSets, need: int) -> str:
    """The remedy "allow smaller replicas (...)" where the policy allows none smaller than
    `need` GPUs; "" where it does (those did not fit the model or meet the SLO)."""
    policy = sets.instance.policy
    if min(policy.tensor_parallel) * min(policy.pipeline_parallel) < need:
        return ""
    return "allow smaller replicas (policy.tensor_parallel, policy.pipeline_parallel)"


def usable_gpus(sets: ProgramSets, r: str, g: str) -> int:
    """GPUs of type g region r can run: the existing fleet plus the whole units that
    max_gpus buys (servers of gpus_per_node with policy.buy_unit node:
    solver.program.families.servers bounds them by floor(max_gpus / n))."""
    offer = sets.offers[(r, g)]
    unit = node_gpus(sets.instance, g)
    return offer.existing + unit * (offer.max_gpus // unit)


def _why_empty(sets: ProgramSets, r: str, g: str) -> str:
    offer, unit = sets.offers[(r, g)], node_gpus(sets.instance, g)
    if offer.max_gpus == 0 or unit == 1:
        return f"{g} max_gpus 0 and none owned"
    return (
        f"{g} max_gpus {offer.max_gpus:,} holds no whole server of {unit} GPUs "
        "(policy.buy_unit: node) and none owned"
    )


def capacity_upper_bound(sets: ProgramSets, w: str, d: str) -> float:
    """Requests/s region d could serve of w if all its supply ran w's best configuration
    per GPU, each replica at the capacity of an unlimited pool (an over-estimate: pairs,
    integer replicas and finite pools only lower it)."""
    best_per_gpu: dict[str, float] = defaultdict(float)
    for pool in sets.pools_at.get((w, d), ()):
        c = pool.candidate
        best_per_gpu[c.gpu] = max(best_per_gpu[c.gpu], c.ceiling / c.gpus)
    return sum(rate * usable_gpus(sets, d, g) for g, rate in best_per_gpu.items())


def horizon_problems(sets: ProgramSets, months: int) -> list[Problem]:
    """The first month of `months` whose demand no fleet within the regions' power and
    supply can carry, or nothing. `sets` is month 0's (its peak period's for an hourly
    plan); month m's demand is month 0's times each workload's (1 + g_w)^m.

    Each region d holds at most K_d kW of GPUs: its power_kw, and no more than all its
    supply draws (sum_g usable GPUs x kW per GPU, `gpu_kw`); workload w gets at most e_w
    requests/s per kW, its best configuration's ceiling over that configuration's kW in
    any region. Serving D_w requests/s of each w takes at least sum_w D_w / e_w kW, so a
    month where that exceeds sum_d K_d has no plan (an over-estimate of what fits: the
    SLO's failure scenarios, whole replicas and pool sizes only need more). Run where a
    region states power_kw; supply alone is named month by month (`capacity[...]`).
    """
    instance = sets.instance
    if all(instance.region(r).power_kw is None for r in sets.regions):
        return []  # supply alone: each month's own capacity check names it, in GPUs
    per_kw: dict[str, float] = defaultdict(float)
    for (w, d), pools in sets.pools_at.items():
        for pool in pools:
            c = pool.candidate
            most = max(c.requests_per_s, c.ceiling)  # a replica's most, in any pool
            per_kw[w] = max(per_kw[w], most / (c.gpus * gpu_kw(instance, d, c.gpu)))
    held_kw: dict[str, float] = {}
    for r in sets.regions:
        supply_kw = sum(
            usable_gpus(sets, r, g) * gpu_kw(instance, r, g) for (r2, g) in sets.offers if r2 == r
        )
        power_kw = instance.region(r).power_kw
        held_kw[r] = supply_kw if power_kw is None else min(power_kw, supply_kw)
    demand: dict[str, float] = defaultdict(float)
    for (w, _), rate in sets.demand.items():
        demand[w] += rate
    if not demand or any(per_kw[w] <= 0 for w in demand):
        return []  # a workload with no configuration: a problem of its own
    capacity_kw = sum(held_kw.values())
    for month in range(1, months):
        factors = month_factors(instance, month)
        need_kw = sum(rate * factors.get(w, 1.0) / per_kw[w] for w, rate in demand.items())
        if need_kw > capacity_kw * (1 + 1e-9):
            return [_horizon_problem(sets, month, need_kw, held_kw, demand, per_kw)]
    return []


def _horizon_problem(
    sets: ProgramSets,
    month: int,
    need_kw: float,
    held_kw: dict[str, float],
    demand: dict[str, float],
    per_kw: dict[str, float],
) -> Problem:
    instance = sets.instance
    factors = month_factors(instance, month)
    short_kw = need_kw - sum(held_kw.values())
    growth = ", ".join(f"{w} x{factors.get(w, 1.0):,.3g}" for w in demand)
    best = ", ".join(f"{w} {per_kw[w]:,.3g} requests/s per kW" for w in demand)
    holds = ", ".join(
        f"regions[{r}].power_kw {instance.region(r).power_kw:,g}"
        if instance.region(r).power_kw is not None and instance.region(r).power_kw <= kw
        else f"{r}'s supply {kw:,.1f} kW (regions[{r}].supply max_gpus)"
        for r, kw in held_kw.items()
    )
    return Problem(
        f"horizon_capacity[month {month}]",
        f"month {month}: demand grown {growth} (policy.monthly_growth) needs at least "
        f"{need_kw:,.1f} kW even with each workload on its most efficient GPU offered "
        f"({best}), but the regions hold at most {sum(held_kw.values()):,.1f} kW ({holds})",
        _either(
            [
                f"raise the regions' power_kw (and supply) by {_kw(short_kw)} kW in all by "
                f"month {month}",
                f"plan fewer months (policy.horizon_months {month} at most)",
                "lower policy.monthly_growth",
            ]
        ),
    )


def _kw(kw: float) -> str:
    """kW to one decimal, or two significant digits below 0.1 kW (0.043, not 0.0)."""
    return f"{kw:,.1f}" if kw >= 0.1 else f"{kw:.2g}"


def _unroutable_demand(sets: ProgramSets) -> list[Problem]:
    problems = []
    bounds = {
        (w, d): capacity_upper_bound(sets, w, d) for w in sets.workloads for d in sets.regions
    }
    for f in sets.routing_scenarios:
        sets.on_time()
        for w in sets.workloads:
            origins = {o: rate for (w2, o), rate in sets.demand.items() if w2 == w}
            pairs = sets.routes[(f.name, w)]
            reach: dict[str, list[tuple[str, float]]] = defaultdict(list)
            for o, d, rtt in pairs:
                reach[o].append((d, rtt))
            for o, rate in origins.items():
                if reach[o]:
                    continue
                limit = sets.max_failover_rtt_ms(w)
                nearest = _nearest_host(sets, f, w, o)
                link = "add a link" if len(sets.regions) > 1 else "add a region and a link"
                remedy = [_wider_reach(sets, f, w, [o]), link, f"offer capacity closer to {o}"]
                problems.append(
                    Problem(
                        DemandRow(f.name, w, o).name(),
                        f"{f.name}: {rate:.1f} requests/s of {w} from {o} have no region that "
                        f"can serve them within {_rtt(limit)} ({nearest})",
                        _either(remedy),
                    )
                )
            if any(not reach[o] for o in origins):
                continue
            full = {d: bounds[(w, d)] for d in sets.regions}
            wider = partial(_wider_reach, sets, f, w, origins)  # worked out for a shortfall only
            problems += _flow_shortfall(sets, f, w, origins, reach, full, wider)
    return problems


def _why_none(sets: ProgramSets, reach: dict[str, list[tuple[str, float]]], f: Scenario) -> str:
    """ ": east: h100-sxm max_gpus 4 holds no whole server of 8 GPUs ..." for the regions
    these users may reach whose offers place no GPU ("" where none says why)."""
    reached = sorted({d for pairs in reach.values() for d, _ in pairs} - {f.lost_region})
    reasons = [
        f"{d}: {_why_empty(sets, d, g)}"
        for d in reached
        for g in sorted(g for (r, g) in sets.offers if r == d)
        if usable_gpus(sets, d, g) == 0
    ]
    return f": {'; '.join(reasons)}" if reasons else ""


def _nearest_host(sets: ProgramSets, f: Scenario, w: str, o: str) -> str:
    """ "nearest: west at 150 ms", the closest region that can serve w's users from o in f
    at any round trip; where none can, the regions o reaches say why ("west at 50 ms
    offers no GPU that runs chat"), or "no link"."""
    serving = set(sets.serving_regions[w])
    reached = {d: t for d, t in sets.graph.destinations(f, o, None).items() if d != o}
    hosts = {d: t for d, t in reached.items() if d in serving}
    if hosts:
        d = min(hosts, key=lambda r: (hosts[r], r))
        return f"nearest: {d} at {hosts[d]:g} ms"
    if not reached:
        return "no link"
    others = ", ".join(f"{d} at {t:g} ms" for d, t in sorted(reached.items(), key=lambda x: x[1]))
    verb = "offers" if len(reached) == 1 else "offer"
    return f"{others} {verb} no GPU that runs {w}"


def _flow_shortfall(
    sets: ProgramSets,
    f: Scenario,
    w: str,
    origins: dict[str, float],
    reach: dict[str, list[tuple[str, float]]],
    full: dict[str, float],
    wider_reach: Callable[[], str] = str,
) -> list[Problem]:
    """Demand of w in f beyond the max-flow over allowed routes into regions bounded by
    their full-supply capacity (none when every region could take all that may reach it);
    `wider_reach` gives the remedy clause of `_wider_reach` ("" where a longer failover
    round trip would not help), asked only for a shortfall (a search of the region graph
    per scenario and workload: 2 s of a 50 x 50 instance's pre-solve checks)."""
    bound = {d: 0.0 if d == f.lost_region else cap for d, cap in full.items()}
    if f.kind is ScenarioKind.ZONE and f.region is not None:
        zones = sets.zones[f.region]
        bound[f.region] /= zone_loss_overprovision_factor(zones)
    reachable_demand = dict.fromkeys(bound, 0.0)
    for o, rate in origins.items():
        for d, _ in reach[o]:
            reachable_demand[d] += rate
    if all(reachable_demand[d] <= bound[d] for d in bound):
        return []  # every region could take all the demand that may reach it
    import networkx as nx  # only here: a max flow over several regions
    from networkx.algorithms.flow import edmonds_karp

    network = nx.DiGraph()
    for o, rate in origins.items():
        network.add_edge("source", ("o", o), capacity=rate)
        for d, _ in reach[o]:
            network.add_edge(("o", o), ("d", d))
    for d, cap in bound.items():
        network.add_edge(("d", d), "sink", capacity=cap)
    total = sum(origins.values())
    served = nx.maximum_flow_value(network, "source", "sink", flow_func=edmonds_karp)
    if served >= total * (1 - 1e-9):
        return []
    demand_text = " + ".join(
        f"{o} {rate:.1f}" + (f" (may go to {', '.join(d for d, _ in reach[o])})")
        for o, rate in origins.items()
    )
    caps = ", ".join(f"{d} {cap:.1f}" for d, cap in bound.items() if cap > 0)
    return [
        Problem(
            f"capacity[{f.name},{w}]",
            f"{f.name}: demand {demand_text} = {total:.1f} requests/s of {w}, but at most "
            f"{served:.1f} can be served even with every GPU on offer running its best "
            f"configuration ("
            + (
                f"at most {caps} requests/s per region"
                if caps
                else "at most 0 requests/s in every region" + _why_none(sets, reach, f)
            )
            + ")",
            _either(
                [
                    "offer more GPUs in the regions that may serve these users",
                    wider_reach(),
                    "loosen the SLO",
                ]
            ),
        )
    ]


def diagnose_infeasible(
    program: FleetProgram, backend: Backend, settings: SolveSettings
) -> Diagnosis:
    """Name the requirements in conflict by an elastic re-solve of the program."""
    sets = program.sets
    lp = elastic_program(program)
    settings = settings.with_duals(False)
    result = backend.run(lp, settings)
    method = "elastic re-solve (supply and demand slack priced far above any plan)"
    if not result.termination.has_solution:
        result = backend.run(with_bounds(lp, {}, relax=True), settings)
        method += ", relaxed to an LP"
    if result.termination is not Termination.OPTIMAL and not result.termination.has_solution:
        return Diagnosis(
            "infeasible: the program has no plan, and the elastic re-solve found none "
            f"either ({result.termination})",
            (),
            method,
        )
    values = result.values
    problems = _supply_conflicts(sets, values) + _demand_conflicts(sets, values)
    problems += site_conflicts(sets, values)
    if not problems:
        problems = [
            Problem(
                "program",
                "the solver reported infeasibility, but the elastic re-solve needed no "
                "slack: numerical trouble",
                "try another backend (--backend)",
            )
        ]
    count = len(problems)
    return Diagnosis(
        f"infeasible: {count} requirement{'s' if count != 1 else ''} in conflict",
        tuple(problems),
        method,
    )


def elastic_program(program: FleetProgram) -> LinearProgram:
    """The program built elastic (solver.program.elastic): priced slack on every demand and
    supply row, always feasible."""
    sets = program.sets
    return build_program(sets.instance, sets.table, sets.scenarios, elastic=True).lp


def _supply_conflicts(sets: ProgramSets, values: dict[str, float]) -> list[Problem]:
    problems = []
    for (r, g), offer in sets.offers.items():
        extra = values.get(ExtraGpusColumn(r, g).name(), 0.0)
        if extra <= 1e-6:
            continue
        needed = offer.available + math.ceil(extra - 1e-6)
        problems.append(
            Problem(
                GpuSupplyRow(r, g).name(),
                f"{r} supply of {offer.available} {g} (existing {offer.existing} + "
                f"purchasable {offer.max_gpus}) cannot carry "
                f"{_heaviest_load(sets, values, r, g)}: needs {needed}",
                f"raise max_gpus of {g} in {r} to at least {needed - offer.existing}, offer "
                "another GPU type there, or move demand to other regions",
            )
        )
    return problems


def _heaviest_load(sets: ProgramSets, values: dict[str, float], r: str, g: str) -> str:
    """The scenario that loads region r hardest for the workloads running on g there,
    as text: 'us-east 92.6 + rerouted eu-west 30.0 requests/s of chat when eu-west is lost'."""
    workloads = {p.workload for p in sets.pools_of_gpu.get((r, g), ())}
    best_text, best_load = "its load", -1.0
    for f in sets.routing_scenarios:
        parts, total = [], 0.0
        for w in sorted(workloads):
            mine = []
            for o in sets.inflow.get((f.name, w, r), ()):
                rate = values.get(ServedColumn(f.name, w, o, r).name(), 0.0)
                if rate > 1e-6:
                    total += rate
                    mine.append(f"{'' if o == r else 'rerouted '}{o} {rate:.1f}")
            if mine:
                mine[-1] += f" requests/s of {w}"
            parts += mine
        if total > best_load + 1e-9 and parts:
            best_load = total
            when = {
                ScenarioKind.NONE: "with no failure",
                ScenarioKind.REGION: f"when {f.region} is lost",
                ScenarioKind.ZONE: f"when {f.region} loses a zone",
            }.get(f.kind, "")
            best_text = f"{' + '.join(parts)} {when}"
    if sets.survives_replica_loss:
        best_text += " with a spare replica per phase"
    return best_text


def _demand_conflicts(sets: ProgramSets, values: dict[str, float]) -> list[Problem]:
    problems = []
    for f in sets.routing_scenarios:
        for (w, o), rate in sets.demand.items():
            missing = values.get(UnservedColumn(f.name, w, o).name(), 0.0)
            if missing <= 1e-6:
                continue
            places = [(d, rtt) for o2, d, rtt in sets.routes[(f.name, w)] if o2 == o]
            where = ", ".join(f"{d} ({rtt:g} ms)" for d, rtt in places) or "nowhere"
            problems.append(
                Problem(
                    DemandRow(f.name, w, o).name(),
                    f"{missing:.1f} of {rate:.1f} requests/s of {w} from {o} cannot be served "
                    f"({f.description}); allowed: {where}",
                    _either(
                        [
                            f"offer GPUs that can serve {w} in those regions",
                            _wider_reach(sets, f, w, [o]),
                        ]
                    ),
                )
            )
    return problems


def _wider_reach(sets: ProgramSets, f: Scenario, w: str, origins: list[str] | dict) -> str:
    """The remedy clause "raise max_failover_rtt_ms of chat (now 40 ms; west is 50 ms from
    east)" where a longer bound would let some of these users reach a region that may
    serve them; "" where it would not: the scenario keeps users at home (no failure, a
    replica loss), the workload has no bound, or no region that may serve it lies beyond
    the bound (a single-region instance, every region already within reach)."""
    limit = sets.max_failover_rtt_ms(w)
    if not f.reroutes or limit is None:
        return ""
    serving = set(sets.serving_regions[w])
    beyond = []
    for o in origins:
        allowed = sets.graph.destinations(f, o, limit)
        for d, rtt in sets.graph.destinations(f, o, None).items():
            if d in serving and d not in allowed:
                beyond.append((rtt, d, o))
    if not beyond:
        return ""
    rtt, d, o = min(beyond)
    return f"raise max_failover_rtt_ms of {w} (now {limit:g} ms; {d} is {rtt:g} ms from {o})"


def _either(remedies: list[str]) -> str:
    """ "a, b, or c" of the remedies that apply (the empty ones left out)."""
    said = [remedy for remedy in remedies if remedy]
    if len(said) <= 1:
        return "".join(said)
    return ", ".join(said[:-1]) + ("," if len(said) > 2 else "") + " or " + said[-1]


def _rtt(limit: float | None) -> str:
    return "any reachable distance" if limit is None else f"{limit:g} ms"
