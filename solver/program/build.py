"""The fleet program: how many replicas of which configuration to run where.

Sets (solver.program.sets): regions r, d, o; workloads w; candidates c of w with capacity q_c at
the SLO and gpus(c) per replica; scenarios f (none and the single failures the policy
names); routes (f, w, o, d) the latency policy allows; serving modes of (w, d).

    minimise   sum_{r,g} price[r,g] x hours x purchased[r,g]  +  epsilon x GPUs used

    demand[f,w,o]            sum_d served[f,w,o,d] = D[w,o]
    mode_split[f,w,d]        sum_m <m>[f,w,d] = sum_o served[f,w,o,d]
    capacity[f,w,d,phase]    sum_c credit_f[w,c,d] >= load_f[w,d,phase] / max_utilization
                             credit = q_c x alive_f + sum_k gain_k x pooled_f[k]
    pool_size[w,c,r,P]       replicas - P x pool_at_least >= 0               (pooling)
    pooled_within/open       pooled <= replicas, pooled <= M x pool_at_least   (pooling)
    zone_survivors[w,c,r]    Z x survivors - (Z - 1) x replicas <= 0            (zone)
    pool_open[w,c,d]         replicas - M x pool_used <= 0                     (replica)
    replica_spare[w,d,ph,c]  capacity(phase) less one replica of c >= load_none (replica)
    gpu_supply[r,g]          sum gpus(c) x replicas <= existing + max_gpus
    purchase[r,g]            purchased >= sum gpus(c) x replicas - existing
    configs_per_pool[w,d,ph] sum_c pool_used <= max_configs_per_pool           (simplicity)
    one_precision[w]         sum_p precision_used[w,p] <= 1                    (simplicity)
    whole_servers[r,g]       purchased = gpus_per_node x servers               (servers)
    step_needs_pool, step_servers  valid inequalities on the pooling steps, with
                             settings.tighten only (tightening)
    power[r]                 sum_g kW_g x (existing + purchased) <= power_kw   (power)
    rack_space[r]            sum_g racks_g x (existing + purchased) <= racks   (power)

    D[w,o] is the peak demand times demand_growth. replicas, zone_survivors, servers
    integer >= 0; pool_used, pool_at_least binary;
    served, loads, pooled >= 0

With policy.colocation, shared group templates t add groups[t,r] (integer) whose credit
a[w,t] joins each member's capacity and spare rows (solver.program.families.groups).

Each family lives in its own module under `solver.program.families`, opening with its math and
declaring the index type of its row names (solver.program.row_names). With `elastic`, demand
and gpu_supply get priced slack columns as they are built (solver.program.elastic).
"""

from dataclasses import dataclass, field

from models.operations.scenarios import Scenario, failure_scenarios
from models.schema.instance import Instance
from solver.candidates.table import CandidateTable
from solver.colocation.groups import GroupTable
from solver.colocation.templates import all_templates
from solver.program.families import variables
from solver.program.families.capacity import add_capacity_within_pools
from solver.program.families.demand import add_demand_met
from solver.program.families.groups import GroupSets, add_group_rows, add_group_variables
from solver.program.families.objective import add_fleet_cost
from solver.program.families.pooling import add_pool_steps, add_pooling_variables
from solver.program.families.power import add_power_within_site
from solver.program.families.replica import add_pool_open, add_replica_spare
from solver.program.families.servers import add_server_variables, add_whole_servers
from solver.program.families.simplicity import (
    add_configs_per_pool,
    add_one_precision,
    add_precision_variables,
)
from solver.program.families.split import add_mode_split
from solver.program.families.supply import add_gpu_supply, add_purchase_covers_use
from solver.program.families.zone import add_zone_survivors
from solver.program.lp import LinearProgram, Variable
from solver.program.sets import ProgramSets
from solver.program.tightening import add_tightening
from solver.settings import SolveSettings


@dataclass(frozen=True)
class FleetProgram:
    """A built program and the sets that name its rows and columns."""

    lp: LinearProgram
    sets: ProgramSets
    groups: GroupTable = field(default_factory=GroupTable)
    """The shared group templates the program may choose (empty without colocation)."""
    region_costs: dict = field(default_factory=dict, compare=False, repr=False)
    """Each region's proven cost in `lp`, once a solve has worked it out
    (solver.decompose.region_bounds), for re-solves of the same program."""


def build_program(
    instance: Instance,
    table: CandidateTable,
    scenarios: tuple[Scenario, ...] | None = None,
    elastic: bool = False,
    settings: SolveSettings | None = None,
    groups: GroupTable | None = None,
    sets: ProgramSets | None = None,
) -> FleetProgram:
    """The integer program of an instance over a candidate table.

    Args:
        instance: The validated instance.
        table: Candidates with their capacity at the SLO (solver.candidates.table).
        scenarios: Failure scenarios; default: those `policy.survive` asks for.
        elastic: Build the elastic program instead (solver.program.elastic): priced slack on
            every demand and supply row, pools widened to use it; always feasible.
        settings: The run's settings; their deadline is checked after each family
            (`TimeLimitReached` in stage "program build"), and `tighten` adds the valid
            inequalities of solver.program.tightening. None: no deadline, none.
        groups: Shared group templates (solver.colocation.groups); default: enumerated from the
            instance when policy.colocation is on, else none (solver.colocation.templates;
            the periods program passes each period's from its memo).
        sets: The program's sets when the caller made them already (of this instance,
            table, scenarios and `elastic`: the pre-solve checks read them first).
    """
    if sets is None:
        sets = ProgramSets(instance, table, scenarios or failure_scenarios(instance), elastic)
    if groups is None:
        groups = all_templates(instance, table, settings)
    sites = GroupSets(sets, groups)
    lp = LinearProgram(instance.name)

    families = (
        variables.add_replica_variables,
        variables.add_routing_variables,
        variables.add_zone_survivor_variables,
        variables.add_pool_used_variables,
        add_precision_variables,
        add_pooling_variables,
        variables.add_purchase_variables,
        add_server_variables,
        lambda lp, _sets: add_group_variables(lp, sites),
        add_demand_met,
        add_mode_split,
        add_capacity_within_pools,
        add_pool_steps,
        add_zone_survivors,
        add_pool_open,
        add_replica_spare,
        add_configs_per_pool,
        add_one_precision,
        add_gpu_supply,
        add_purchase_covers_use,
        add_whole_servers,
        add_power_within_site,
        lambda lp, _sets: add_tightening(lp, _sets, settings is not None and settings.tighten),
        add_fleet_cost,
        # last: extends the capacity, spare, supply and purchase rows with the groups
        lambda lp, _sets: add_group_rows(lp, sites),
    )
    for add_family in families:
        add_family(lp, sets)
        if settings is not None:  # the caller's check after the build ends the stage
            settings.check("program build", within=True)
    return FleetProgram(lp, sets, groups)


def with_bounds(
    lp: LinearProgram, bounds: dict[str, tuple[float, float | None]], relax: bool = False
) -> LinearProgram:
    """A copy of `lp` with some variables' bounds replaced; with `relax`, every integer
    variable becomes continuous. The rows are shared (they are frozen), and so is every
    column whose bounds and integrality stay (frozen too): a month's pricing LP and
    fixed passes bound a few thousand of its tens of thousands of columns."""
    copy = LinearProgram(lp.name, objective=dict(lp.objective))
    copy.objective_constant = lp.objective_constant
    copy.constraints = dict(lp.constraints)
    columns = copy.variables
    for name, var in lp.variables.items():
        bound = bounds.get(name)
        integer = var.integer and not relax
        if bound is None and integer == var.integer:
            columns[name] = var
            continue
        lower, upper = (var.lower, var.upper) if bound is None else bound
        columns[name] = Variable(var.name, lower, upper, integer)
    return copy
