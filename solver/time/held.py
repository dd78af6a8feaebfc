"""The held fleet: the static plan of the day's peak held all day, the periods program's
first plan (its rounds start from it, solver.decompose.by_period), planned beside the
build within `HELD_SHARE` of the time left (solver.time.step.PeriodsStep); and the fleet a
month hands to the months after it (`plan_fleet`), grown to a later month's demand
(`grown_fleet`), their fallback where their own plan is not found in time."""

import logging
import math
from collections.abc import Callable
from dataclasses import replace

from models.operations.procurement import month_factors
from models.operations.time_demand import held_all_day
from models.schema.instance import Instance
from solver.candidates.table import CandidateTable
from solver.colocation.templates import TemplateMemo
from solver.decompose.period_split import Held
from solver.program.families.pricing import CommittedColumn
from solver.program.families.variables import PoolUsedColumn
from solver.program.row_names import ReplicasColumn, family_of, split_timed
from solver.settings import SolveSettings

LOG = logging.getLogger(__name__)
"""Why a held fleet could not be planned, at debug level."""

HELD_SHARE = 0.6
"""The share of the time left that the static plan of the day's peak may take."""

HELD_PLAN_GAP = 0.01
"""The loosest gap the static plan of the day's peak is solved to (the run's where that
is looser): it is the rounds' first plan, which they improve, not their proof."""

HeldFleet = Callable[
    [Instance, CandidateTable, SolveSettings, TemplateMemo | None],
    tuple[dict[tuple[str, str], float], dict[str, float]] | None,
]
"""The static plan of an instance: GPUs bought per (region, GPU type) and its pools'
integer columns by name, or None (no plan within its settings' deadline); its last
argument the shared group templates' memo over the table (`TemplateMemo.over`)."""


def planned_held(
    planned: HeldFleet,
    instance: Instance,
    table: CandidateTable,
    settings: SolveSettings,
    month: int = 0,
    templates: TemplateMemo | None = None,
) -> Held | BaseException | None:
    """The held fleet of `instance` (month `month`'s). It only speeds the rounds up, so a
    static plan that fails for any reason but an interruption leaves them without it
    (logged at debug level); an interruption is handed to the rounds' thread to raise."""
    try:
        found = planned(held_all_day(instance), table, settings, templates)
    except Exception:  # any failure: the rounds go on without the held fleet
        LOG.debug("no held fleet for %s", instance.name, exc_info=True)
        return None
    except BaseException as error:  # an interruption: the rounds' thread raises it
        return error
    if found is None:
        return None
    bought, layout = found
    committed = {CommittedColumn(r, g).name(): gpus for (r, g), gpus in bought.items()}
    return Held(committed, layout, month)


def grown_fleet(held: Held, instance: Instance, month: int) -> Held:
    """`held`, planned for an earlier month's peak, with its pools grown to month
    `month`'s demand (`Held.grown`, what the rounds' last plan holds where they end
    without one): each pool's replicas times its workload's growth between the two
    months, rounded up,

        n'[w,c,r] = ceil(n[w,c,r] x (1 + g_w)^(month - held.month)),

    on the same configurations (`pool_used` kept); a pool of more replicas serves at
    least as much per replica, so every scenario's load grown by (1 + g_w)^k fits where
    the held load did (the supply and power caps may still refuse it). Its pooling
    steps are left to the program."""
    if month <= held.month:
        return held
    factors = month_factors(instance, month - held.month)
    grown = {}
    for name, value in held.layout.items():
        family = family_of(name)
        if family == ReplicasColumn.family:
            factor = factors.get(ReplicasColumn.parse(name).workload, 1.0)
            grown[name] = float(math.ceil(value * factor - 1e-9))
        elif family == PoolUsedColumn.family:
            grown[name] = value
    return replace(held, grown=grown)


def held_within(planned: Held, held: Held) -> bool:
    """Whether every pool of `planned` runs a configuration `held` runs (its `pool_used`
    column at 1) at no more replicas than `held` holds grown (`Held.late_layout`)."""
    pools = held.late_layout
    return all(value <= pools.get(name, 0.0) for name, value in planned.layout.items() if value)


def plan_fleet(values: dict[str, float], month: int) -> Held | None:
    """The fleet a month's plan (`values`) holds, the months after it's fallback
    (`PeriodsStep.fallback`): its committed GPUs and each pool at its most replicas in
    any period, n[w,c,r] = max_p n[w,c,r]@p (its configuration used where any period
    uses it), which held all day serves every period's load of that month (the supply
    and power caps may refuse it where pools peak apart); None without a pool."""
    committed: dict[str, float] = {}
    layout: dict[str, float] = {}
    for name, value in values.items():
        base = split_timed(name)[0]
        family = family_of(base)
        if family == CommittedColumn.family:
            committed[base] = max(committed.get(base, 0.0), value)
        elif family in (ReplicasColumn.family, PoolUsedColumn.family):
            layout[base] = max(layout.get(base, 0.0), float(round(value)))
    return Held(committed, layout, month) if layout else None
