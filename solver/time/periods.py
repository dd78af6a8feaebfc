"""The program in time: one copy of the static program per period of the day, joined by
the pricing rows (solver.program.families.pricing).

Periods. The interactive warm rates of the 24 UTC hours (models.operations.time_demand.warm_grid:
demand plus the autoscaler's headroom ahead of the ramps) are merged into periods of
equal rate vectors (models.operations.time_periods.aggregate_periods); a period p stands for w_p
hours a day.

Per period the static program is built on the period's hour instance (every
interactive (workload, region) at its warm rate; models.operations.time_demand.hour_instance), so
each period has its own replicas, routing, capacity rows per failure scenario, pooling
steps and supply rows. Its rows and columns carry the period as their index's typed
`period` field (solver.program.row_names), written into the name only in the program:
`replicas[chat,h100...,us-east]@t07` is the pool's replicas in the period starting at
UTC hour 7. Its
objective is dropped (its `purchased` columns stay, unpriced, so that whole servers,
power and racks hold in every hour); the pricing rows take its place:

    gpu_cover[r,g,p]:  committed[r,g] + on_demand[r,g,p] >= used[r,g,p] - existing[r,g]
    minimise  days x (24 p_res committed + sum_p w_p p_od on_demand_p)

committed and on_demand come in whole servers with policy.buy_unit: node, as the static
program's purchases do; a flat day is one period of 24 hours, whose cost is the static
plan's to the cent.

Three more families join the periods (each module opens with its math):
solver.program.families.batch_work (batch soaked on interactive pools or run on dedicated
replicas, against an hour-by-hour deadline schedule; dedicated GPUs join `used`),
solver.program.families.spot_pools (interactive spot replicas with a Poisson margin, with
policy.spot_confidence) and solver.program.families.failover_start (spare started after a
region loss, its start window paid from the error budget).

One configuration per pool holds over the day (solver.program.families.simplicity:
`day_config[w,c,d]` shared by the periods, `configs_per_day[w,d,phase]` within
policy.max_configs_per_pool), not only within each period.

Only `committed`, the day's configurations, batch and the dedicated batch replicas
couple the periods (and, through a shared GPU offer, the workloads).
The program is solved as one: splitting by workload would need the commitments priced
across workloads (a Lagrangian on committed), which the instances here do not need; its
size is the static program's times the number of periods (reported in the plan).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from models.operations.scenarios import failure_scenarios
from models.operations.site import node_gpus, offered
from models.operations.time_demand import hour_instance, warm_grid
from models.operations.time_periods import Period, aggregate_periods
from models.schema.instance import Instance
from solver.candidates.table import CandidateTable
from solver.colocation.templates import TemplateMemo
from solver.program.build import FleetProgram, build_program
from solver.program.families.batch_work import BatchWork, add_batch_work
from solver.program.families.failover_start import add_failover_start, failover_terms
from solver.program.families.pricing import OfferTerms, OnDemandColumn, add_pricing
from solver.program.families.simplicity import add_day_configs
from solver.program.families.spot_pools import SpotTerms, add_spot_pools
from solver.program.lp import Constraint, LinearProgram, Variable
from solver.program.row_names import GroupsColumn, ReplicasColumn, split_timed, timed_name
from solver.settings import SolveSettings


def at_period(name: str, period: int) -> str:
    """A static program's row or column name in the period starting at UTC hour `period`
    (solver.program.row_names.timed_name: the program's copy of a static name)."""
    return timed_name(name, period)


def split_period(name: str) -> tuple[str, int | None]:
    """(static name, period) of a period name; (name, None) for a name without one."""
    base, period, _ = split_timed(name)
    return base, period


@dataclass(frozen=True)
class PeriodProgram:
    """The static program of one period."""

    period: Period
    program: FleetProgram

    @property
    def first_hour(self) -> int:
        """The period's name: its first UTC hour."""
        return self.period.hours[0]


@dataclass(frozen=True)
class TimeProgram:
    """The joined program and its periods."""

    lp: LinearProgram
    periods: tuple[PeriodProgram, ...]
    instance: Instance
    table: CandidateTable
    offers: tuple[OfferTerms, ...]
    batch: tuple[BatchWork, ...] = ()
    """Each batch workload's columns per region (solver.program.families.batch_work)."""
    spot: dict[int, dict[tuple[str, str, str], SpotTerms]] = field(default_factory=dict)
    """Period -> the pools that may run on spot, with u and beta
    (solver.program.families.spot_pools; policy.spot_confidence)."""

    def period_values(self, values: dict[str, float], period: int) -> dict[str, float]:
        """The values of one period under the static program's names (`values`: a
        solution of `lp`, which names every column)."""
        names = self._columns_by_period.get(period, ([], []))
        if all(map(values.__contains__, names[0])):  # a solution of `lp`: every column
            return dict(zip(names[1], map(values.__getitem__, names[0]), strict=True))
        return {base: values[name] for name, base in zip(*names, strict=True) if name in values}

    @cached_property
    def _columns_by_period(self) -> dict[int | None, tuple[list[str], list[str]]]:
        """Period -> its columns and their static names, in order, the names parsed once
        (the read-back and the pricing LP ask for every period's values)."""
        found: dict[int | None, tuple[list[str], list[str]]] = {}
        for name in self.lp.variables:
            base, hour, _ = split_timed(name)
            columns, bases = found.setdefault(hour, ([], []))
            columns.append(name)
            bases.append(base)
        return found


def interactive_table(instance: Instance, table: CandidateTable) -> CandidateTable:
    """The candidates of the interactive workloads (batch has its own columns,
    solver.program.families.batch_work)."""
    return CandidateTable({w.name: table.of(w.name) for w in instance.workloads if not w.is_batch})


def day_periods(instance: Instance) -> tuple[Period, ...]:
    """The periods of the warm day (the module text)."""
    return aggregate_periods(warm_grid(instance))


def build_time_program(
    instance: Instance,
    table: CandidateTable,
    settings: SolveSettings | None = None,
    periods: tuple[Period, ...] | None = None,
    templates: TemplateMemo | None = None,
    check: Callable[[str], None] | None = None,
) -> TimeProgram:
    """One static program per period of the warm day (`periods`, default
    `day_periods(instance)`), joined by the pricing rows; the run's deadline (`settings`)
    is checked after each period's copy ("program build"; `check`: the check to call
    there instead, solver.time.step's, which lets a day with a fallback build on).
    `templates`: a memo of shared group templates over `table`'s interactive candidates,
    kept across instances that differ in demand alone (a horizon's months); default: the
    day's own."""
    periods = day_periods(instance) if periods is None else periods
    lp = LinearProgram(f"{instance.name}-hours")
    if check is None and settings is not None:
        check = settings.check
    parts = _period_copies(lp, instance, table, periods, check, templates)
    add_day_configs(lp, [(part.first_hour, part.program.sets) for part in parts])
    used = gpus_used(parts)
    batch = add_batch_work(lp, instance, table, parts, used)
    offers = offer_terms(instance)
    weights = {part.first_hour: part.period.weight_hours for part in parts}
    tie_break = parts[-1].program.sets.tie_break_per_gpu if parts else 0.0
    add_pricing(lp, offers, used, weights, instance.policy.hours_per_month, tie_break)
    spot = {
        part.first_hour: add_spot_pools(lp, part.program, part.first_hour, weights[part.first_hour])
        for part in parts
    }
    _add_failover_starts(lp, instance, parts, offers, weights)
    return TimeProgram(lp, parts, instance, table, offers, batch, spot)


def _period_copies(
    lp: LinearProgram,
    instance: Instance,
    table: CandidateTable,
    periods: tuple[Period, ...],
    check: Callable[[str], None] | None,
    templates: TemplateMemo | None = None,
) -> tuple[PeriodProgram, ...]:
    """The static program of each period at its warm rates, copied into `lp` in that
    period; the deadline checked after each copy. The shared group templates
    (policy.colocation) are built once per value of the peaks they read
    (solver.colocation.templates): the periods' instances differ in demand alone."""
    scenarios = failure_scenarios(instance)
    interactive = interactive_table(instance, table)
    if templates is None:  # built once per demand they read, not per period
        templates = TemplateMemo(interactive)
    parts = []
    for period in periods:
        hour = hour_instance(instance, period.values)
        groups = templates.templates(hour)
        program = build_program(hour, interactive, scenarios, groups=groups)
        parts.append(PeriodProgram(period, program))
        _copy_into(lp, program, period.hours[0])
        if check is not None:
            check("program build")
    return tuple(parts)


def gpus_used(parts: tuple[PeriodProgram, ...]) -> dict[tuple[str, str, int], dict[str, float]]:
    """(region, GPU, period) -> the period's replica columns of that GPU type with their
    GPUs per replica: used[r,g,p] of the pricing rows (batch adds its dedicated ones),
    the shared groups' replicas (groups[t,r], policy.colocation) among them: a group's
    GPUs are paid as a pool's are."""
    used: dict[tuple[str, str, int], dict[str, float]] = {}
    for part in parts:
        hour = part.first_hour
        for pool in part.program.sets.pools:
            key = (pool.region, pool.candidate.gpu, hour)
            name = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).at(hour).name()
            used.setdefault(key, {})[name] = float(pool.candidate.gpus)
        for t in part.program.groups.templates:
            for region in part.program.sets.regions:
                column = GroupsColumn(t.key, region)
                if column.name() in part.program.lp.variables:
                    name = column.at(hour).name()
                    used.setdefault((region, t.gpu, hour), {})[name] = float(t.gpus)
    return used


def _add_failover_starts(
    lp: LinearProgram,
    instance: Instance,
    parts: tuple[PeriodProgram, ...],
    offers: tuple[OfferTerms, ...],
    weights: dict[int, int],
) -> None:
    """Each period's failover start rows, where a workload has an error budget to spend
    (solver.program.families.failover_start)."""
    terms = failover_terms(instance)
    if not terms.budget_minutes:
        return
    for part in parts:
        hour = part.first_hour
        capped = {
            (o.region, o.gpu): (
                OnDemandColumn(o.region, o.gpu, period=hour).name(),
                o.max_on_demand_gpus,
            )
            for o in offers
            if o.max_on_demand_gpus < o.max_gpus
            and OnDemandColumn(o.region, o.gpu, period=hour).name() in lp.variables
        }
        add_failover_start(lp, part.program, hour, terms, capped, weights[hour])


def offer_terms(instance: Instance) -> tuple[OfferTerms, ...]:
    """Every (region, GPU type) the region offers (`models.operations.site.offered`), as
    pricing reads it."""
    terms = []
    for region, gpu in offered(instance):
        supply = region.supply.get(gpu)
        max_gpus = supply.max_gpus if supply else 0
        cap = supply.max_on_demand_gpus if supply else None
        terms.append(
            OfferTerms(
                region=region.name,
                gpu=gpu,
                existing=region.existing.get(gpu, 0),
                max_gpus=max_gpus,
                available=region.available_gpus(gpu),
                on_demand_price_per_gpu_hour=instance.price_per_gpu_hour(region.name, gpu),
                reserved_price_per_gpu_hour=supply.reserved_price_per_gpu_hour if supply else None,
                max_on_demand_gpus=max_gpus if cap is None else cap,
                spot_price_per_gpu_hour=supply.spot_price_per_gpu_hour if supply else None,
                gpus_per_server=node_gpus(instance, gpu),
            )
        )
    return tuple(terms)


def _copy_into(lp: LinearProgram, program: FleetProgram, hour: int) -> None:
    """The period's columns and rows under their names in the period (the static
    program's names are rendered, so the copy marks them: `timed_name`), less the
    objective: the period's
    `purchased` (GPUs installed beyond the owned ones that hour) keeps its rows, so that
    whole servers, power and racks hold in every hour, but costs nothing itself (the
    pricing rows price the hour's GPUs).

    Each column's name is marked once (the name, then the period's mark: `timed_name`
    of a name is the name followed by `timed_name("", hour)`; declared as
    `LinearProgram.add_variable` declares it) and its rows' terms take that one string
    (a row's terms keyed by its declared columns' own names, as
    `LinearProgram.add_constraint` keys them); the static program's rows were checked
    as they were added (declared columns), so the copy only checks that no name is
    taken already (and drops a zero term, as `add_constraint` does): the same program
    as adding each row through `add_constraint`, in less time (the module text of
    build_time_program's caller, tests/bench/test_procurement_stages.py, times it;
    procurement-3region's month 0, 21 periods: 37-47 ms of CPU, 21-31 ms with the
    mark written once and the columns declared in place)."""
    mark = timed_name("", hour)  # a name in the period: the name, then this
    timed = {name: name + mark for name in program.lp.variables}
    variables = lp.variables
    for name, var in program.lp.variables.items():
        own = timed[name]
        if own in variables:
            raise ValueError(f"duplicate variable {own}")
        variables[own] = Variable(own, var.lower, var.upper, var.integer)
    constraints = lp.constraints
    rename = timed.__getitem__
    for name, row in program.lp.constraints.items():
        own = name + mark
        if own in constraints:
            raise ValueError(f"duplicate constraint {own}")
        coefficients = row.coefficients
        try:
            if 0.0 in coefficients.values():  # a zero term to drop (add_constraint drops them)
                terms = {timed[var]: c for var, c in coefficients.items() if c != 0.0}
            else:  # the same terms, renamed at C speed
                terms = dict(zip(map(rename, coefficients), coefficients.values(), strict=True))
        except KeyError as missing:
            unknown = [missing.args[0]]
            raise ValueError(f"constraint {own} uses undeclared variables {unknown}") from None
        constraints[own] = Constraint(own, row.family, terms, row.sense, row.rhs)
