"""Levers ranked by dollars: the plan re-solved with one change at a time.

Shadow prices say where to look (the marginal $ of one more unit of a right-hand side);
a lever is a discrete change of the question itself, and only a re-solve says what it is
worth. Each lever is a pure function Instance -> Instance (or None where it does not
apply): the instance's set keys are dumped, one thing changed, and the result validated
again as a new Instance (`models.io.loading.validate_instance`), so a lever's instance is
exactly what a user would get by editing the file the same way.

The levers (names are what the report shows):

- `prefix-cache hit +10 points`: every workload's prefix-cache hit rate + 0.10 (capped
  below 1).
- `fp8 KV` / `fp4 KV`: every model's KV cache one precision step below what it uses now
  (the default KV rule: the weight precision, never below fp8).
- `precision one step down`: every model may also use the next lower weight precision.
- `TTFT +20%` / `TPOT +20%`: every workload's p99 target looser by 20%.
- `allow disaggregation`, `allow co-location`: the policy switch turned on.
- `credit TPOT pooling`: `policy.credit_tpot_pooling` on, so TPOT-limited pools are
  credited what they carry at their size, for an instance that turned it off; its saving
  is what the lone-replica credit costs (not a change to the fleet's world, a finer
  program).
- `allow GPU_NAME`: a catalog GPU type the instance does not offer, offered in every
  region at its catalog price, up to the largest supply the region has of any type.
- `drop survive: X`: the failure policy's single-failure requirement removed.

Hourly plans (models.operations.time_demand.uses_time) re-solve the hourly program with
every lever above, and with the levers of time:

- `daily profile flattened`: every hourly profile replaced by a flat day of the same
  volume (peak_requests_per_s x mean w / max w with a peak rate): what moving all load
  out of the peak would save at most.
- `failover start -50%`: `policy.failover_start_s` half of what it is (given, or the
  slowest replica start), where some workload spends an error budget on a region loss.
- `lift on-demand caps`: every `max_on_demand_gpus` removed.
- `reserved price -10%`: every reserved price 10% lower (a better commitment deal).
- `interactive spot (99%)`: `policy.spot_confidence` 0.99 where spot is offered and
  interactive pools do not use it yet.

A lever with no plan says why (`reason`: the diagnosis' first requirement in conflict,
e.g. "every configuration keeps its KV cache in fp4, which h100-sxm cannot hold"). A
lever that changes the GPUs in use but not the whole servers bought (`policy.buy_unit:
node`) saves nothing, and says so (`note`: "rounded to whole servers: 7 GPUs saved, 0
servers"), so a "+0" is never read as a lever that changes nothing.

Re-solves run in a spawn-context process pool with one solver thread each (DESIGN.md,
"Scale") when there is more than one and `jobs` > 1.

Each lever gets the instance's whole time limit, or, where the caller gives one
(`explain --levers-time-limit`), the levers share one deadline, counted from when they
start: each lever, as it starts, gets an even share of what is left over the rounds of
`jobs` levers still to end (itself included), so the time a quick lever leaves is the
later ones' (a lever with no base plan to start from: never less than twice what the
base plan's solve took, `BASE_SOLVES`). A lever its limit stops with a plan reports it
with its gap (`status` "feasible", `gap`): its cost is then an upper bound and its
saving a lower bound; one stopped before it has any plan says so (`no_solution`).

The base plan starts every static re-solve (`SolveSettings.start`, by column name). A
lever that relaxes the question (a GPU type offered, a target looser, a failure
requirement dropped, ...) keeps the base plan a plan of its program: its search begins
with the base's cost in hand, skips the restricted program's start
(solver.decompose.warm_start), and even stopped by its share never reads below the base
(a saving >= 0, where a search stopped early could end on a dearer plan). For any lever
the start changes the search only, never the optimum the lever is proven to.
"""

import math
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from models.io.loading import validate_instance
from models.operations.time_demand import failover_window_s, uses_time
from models.physics import catalog
from models.physics.precision import Precision
from models.schema.errors import InputError
from models.schema.instance import Instance
from models.schema.policy import Survive
from solver.analysis.capacity_bands import uncertain_pools
from solver.analysis.paid import buys_whole_servers, servers_bought
from solver.errors import Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan
from solver.settings import Deadline, SolveSettings
from solver.solve import solve
from solver.workers import process_pool

HIT_RATE_STEP = 0.10
"""Prefix-cache hit-rate lever: ten points more of the prompt served from cache."""
HIT_RATE_CEILING = 0.99
"""The hit rate a lever raises to at most (1 would mean no prefill at all)."""
SLO_LOOSENING = 1.2
"""TTFT and TPOT levers: the p99 target times 1.2 (20% looser)."""
_LOWER = {Precision.BF16: Precision.FP8, Precision.FP8: Precision.FP4}

Transform = Callable[[Instance], Instance | None]


@dataclass(frozen=True)
class Lever:
    """A named instance transformation."""

    name: str
    apply: Transform


class LeverResult(BaseModel):
    """One lever's re-solve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lever: str
    cost_per_month: float | None
    """The re-solved plan's cost; None when it has no plan (status says why)."""
    saving_per_month: float | None
    """Base cost minus the lever's cost (negative: the lever costs more)."""
    status: str = "solved"
    """solved | feasible (a plan not proven within the gap in the lever's share of the
    time limit: `gap`) | infeasible | no_solution | rejected | bad_input"""
    gap: float | None = None
    """The plan's relative gap to its bound where it is not proven (status feasible):
    the lever's optimum lies within cost x (1 - gap) .. cost."""
    total_gpus: int | None = None
    """GPUs in use."""
    servers: int | None = None
    """Whole servers bought (0 when the plan buys single GPUs)."""
    whole_servers: bool = False
    """Whether the plan buys whole servers of more than one GPU."""
    reason: str = ""
    """Why there is no plan (the diagnosis' first requirement in conflict)."""
    note: str = ""
    """What the saving hides: GPUs saved that whole servers round away."""
    uncertain: tuple[str, ...] = ()
    """The lever plan's pools whose capacity rests on a borrowed GPU generation or an
    unmeasured regime, with their error band (`capacity_bands.uncertain_pools`): the
    saving is only as good as that band."""


def _edited(instance: Instance, edit: Callable[[dict[str, Any]], bool]) -> Instance | None:
    """The instance with `edit` applied to its set keys, validated again; None when
    `edit` says it changed nothing."""
    data = instance.model_dump(mode="json", exclude_unset=True)
    if not edit(data):
        return None
    return validate_instance(data, f"{instance.name} (lever)")


def _workloads(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["workloads"]


def more_prefix_hits(instance: Instance) -> Instance | None:
    """Every workload's prefix-cache hit rate + 10 points (at most 0.99)."""

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for entry, workload in zip(_workloads(data), instance.workloads, strict=True):
            hit = min(workload.prefix_cache_hit_rate + HIT_RATE_STEP, HIT_RATE_CEILING)
            if hit > workload.prefix_cache_hit_rate:
                entry["prefix_cache_hit_rate"] = hit
                changed = True
        return changed

    return _edited(instance, edit)


def current_kv_precision(instance: Instance, model: str) -> Precision:
    """The lowest KV precision a model's replicas can use today: its `kv_precision`, else
    its lowest weight precision but never below fp8 (the default KV rule)."""
    entry = instance.model_entry(model)
    if entry.kv_precision is not None:
        return entry.kv_precision
    lowest = min(entry.weight_precisions, key=lambda p: p.bytes_per_element)
    return Precision.FP8 if lowest is Precision.FP4 else lowest


def lower_kv(instance: Instance) -> Instance | None:
    """Every model's KV cache one precision step down (bf16 -> fp8 -> fp4)."""

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for entry in data["models"]:
            lower = _LOWER.get(current_kv_precision(instance, entry["name"]))
            if lower is not None:
                entry["kv_precision"] = str(lower)
                changed = True
        return changed

    return _edited(instance, edit)


def lower_kv_name(instance: Instance) -> str:
    """`fp8 KV` or `fp4 KV`: what `lower_kv` moves the first model to."""
    lower = _LOWER.get(current_kv_precision(instance, instance.models[0].name), Precision.FP4)
    return f"{lower} KV"


def precision_step_down(instance: Instance) -> Instance | None:
    """Every model may also use the weight precision one step below its lowest."""

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for entry, model in zip(data["models"], instance.models, strict=True):
            lowest = min(model.weight_precisions, key=lambda p: p.bytes_per_element)
            lower = _LOWER.get(lowest)
            if lower is not None and not model.is_adapter:
                entry["weight_precisions"] = [*map(str, model.weight_precisions), str(lower)]
                changed = True
        return changed

    return _edited(instance, edit)


def looser_slo(key: str) -> Transform:
    """A lever making every workload's `slo.<key>` 20% looser. A voice workload's targets
    derive from its `first_audio_ms` budget and stay: a looser one would contradict the
    budget (the lever then failed validation and ended `explain --levers` with exit 2)."""

    def apply(instance: Instance) -> Instance | None:
        def edit(data: dict[str, Any]) -> bool:
            changed = False
            for entry in _workloads(data):
                if entry.get("slo", {}).get("first_audio_ms") is not None:
                    continue
                target = entry.get("slo", {}).get(key)
                if target is not None:
                    entry["slo"][key] = target * SLO_LOOSENING
                    changed = True
            return changed

        return _edited(instance, edit)

    return apply


def policy_switch(key: str) -> Transform:
    """A lever turning `policy.<key>` on."""

    def apply(instance: Instance) -> Instance | None:
        if getattr(instance.policy, key):
            return None
        if key == "colocation" and len(instance.workloads) < 2:
            return None  # one workload has nobody to share with

        def edit(data: dict[str, Any]) -> bool:
            data.setdefault("policy", {})[key] = True
            return True

        return _edited(instance, edit)

    return apply


def allow_gpu(gpu: str) -> Transform:
    """A lever offering catalog GPU `gpu` in every region at its catalog price, up to the
    largest supply (`max_gpus`) the region offers of any type."""

    def apply(instance: Instance) -> Instance | None:
        if any(entry.name == gpu for entry in instance.gpus):
            return None

        def edit(data: dict[str, Any]) -> bool:
            data["gpus"].append({"name": gpu})
            changed = False
            for entry, region in zip(data["regions"], instance.regions, strict=True):
                largest = max((s.max_gpus for s in region.supply.values()), default=0)
                if largest:
                    entry.setdefault("supply", {})[gpu] = {"max_gpus": largest}
                    changed = True
            return changed

        return _edited(instance, edit)

    return apply


def drop_failure_requirement(instance: Instance) -> Instance | None:
    """The policy's single-failure requirement removed (`survive: none`)."""
    if instance.policy.survive is Survive.NONE:
        return None

    def edit(data: dict[str, Any]) -> bool:
        data["policy"]["survive"] = str(Survive.NONE)
        return True

    return _edited(instance, edit)


FAILOVER_START_SHARE = 0.5
"""`failover start -50%`: the start time a faster start (warm images, pre-pulled
weights) would give."""
RESERVED_DISCOUNT = 0.9
"""`reserved price -10%`."""
SPOT_CONFIDENCE = 0.99
"""`interactive spot (99%)`: the confidence its pools keep their SLO with."""


def flatten_day(instance: Instance) -> Instance | None:
    """Every hourly profile flat, at the same daily volume."""

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for entry in _workloads(data):
            for demand in entry.get("demand", {}).values():
                profile = demand.get("hourly_profile")
                if profile is None or max(profile) == min(profile):
                    continue
                if demand.get("peak_requests_per_s") is not None:
                    mean = sum(profile) / len(profile)
                    demand["peak_requests_per_s"] *= mean / max(profile)
                demand["hourly_profile"] = [1.0] * len(profile)
                changed = True
        return changed

    return _edited(instance, edit)


def faster_failover_start(instance: Instance) -> Instance | None:
    """`policy.failover_start_s` halved, where an availability target spends budget on a
    region loss (survive: region)."""
    if instance.policy.survive is not Survive.REGION or not any(
        w.slo.availability is not None and not w.is_batch for w in instance.workloads
    ):
        return None
    start_s = failover_window_s(instance)
    if start_s <= 0:
        return None

    def edit(data: dict[str, Any]) -> bool:
        data.setdefault("policy", {})["failover_start_s"] = FAILOVER_START_SHARE * start_s
        return True

    return _edited(instance, edit)


def supply_edit(key: str, change: Callable[[float], float | None]) -> Transform:
    """A lever changing `key` of every supply entry that sets it (None: remove it)."""

    def apply(instance: Instance) -> Instance | None:
        def edit(data: dict[str, Any]) -> bool:
            changed = False
            for region in data["regions"]:
                for offer in region.get("supply", {}).values():
                    if offer.get(key) is None:
                        continue
                    value = change(offer[key])
                    if value is None:
                        del offer[key]
                    else:
                        offer[key] = value
                    changed = True
            return changed

        return _edited(instance, edit)

    return apply


def interactive_spot(instance: Instance) -> Instance | None:
    """Interactive pools may run spot replicas (policy.spot_confidence 0.99), where some
    supply offers a spot price."""
    if instance.policy.spot_confidence is not None:
        return None
    if not any(
        offer.spot_price_per_gpu_hour is not None
        for region in instance.regions
        for offer in region.supply.values()
    ):
        return None

    def edit(data: dict[str, Any]) -> bool:
        data.setdefault("policy", {})["spot_confidence"] = SPOT_CONFIDENCE
        return True

    return _edited(instance, edit)


def time_levers(instance: Instance) -> list[Lever]:
    """The levers of time (hourly instances only; see the module text)."""
    if not uses_time(instance):
        return []
    return [
        Lever("daily profile flattened", flatten_day),
        Lever("failover start -50%", faster_failover_start),
        Lever("lift on-demand caps", supply_edit("max_on_demand_gpus", lambda _: None)),
        Lever(
            "reserved price -10%",
            supply_edit("reserved_price_per_gpu_hour", lambda p: RESERVED_DISCOUNT * p),
        ),
        Lever("interactive spot (99%)", interactive_spot),
    ]


def levers_for(instance: Instance) -> list[Lever]:
    """Every lever that applies to the instance, in the module docstring's order."""
    levers = [
        Lever("prefix-cache hit +10 points", more_prefix_hits),
        Lever(lower_kv_name(instance), lower_kv),
        Lever("precision one step down", precision_step_down),
        Lever("TTFT +20%", looser_slo("ttft_p99_ms")),
        Lever("TPOT +20%", looser_slo("tpot_p99_ms")),
        Lever("allow disaggregation", policy_switch("disaggregation")),
        Lever("allow co-location", policy_switch("colocation")),
        Lever("credit TPOT pooling", policy_switch("credit_tpot_pooling")),
        *(Lever(f"allow {gpu}", allow_gpu(gpu)) for gpu in catalog.gpu_catalog()),
        Lever(f"drop survive: {instance.policy.survive}", drop_failure_requirement),
        *time_levers(instance),
    ]
    return [lever for lever in levers if lever.apply(instance) is not None]


def solve_lever(
    name: str,
    instance: Instance,
    base_cost: float,
    backend: str | None,
    time_limit_s: float | None = None,
    start: Mapping[str, float] | None = None,
) -> LeverResult:
    """Solve a lever's instance with one solver thread, within `time_limit_s` (default:
    the instance's), from `start` (the base plan's values by column name) where given;
    every ending is a LeverResult, one without a plan with its reason."""
    settings = SolveSettings.of(instance, backend=backend, threads=1, time_limit_s=time_limit_s)
    if start is not None:
        settings = replace(settings, start=start)
    try:
        plan = solve(instance, settings)
    except Infeasible as error:
        problems = error.diagnosis.problems
        reason = str(error) if not problems else f"{problems[0].requirement}: {problems[0].message}"
        if len(problems) > 1:
            reason += f" (and {len(problems) - 1} more)"
        return _no_plan(name, "infeasible", reason)
    except NoSolution as error:
        return _no_plan(name, "no_solution", str(error))
    except PlanRejected as error:
        return _no_plan(name, "rejected", str(error))
    cost = plan.cost_per_month or 0.0
    proven = plan.optimal or plan.solver is None
    return LeverResult(
        lever=name,
        cost_per_month=cost,
        saving_per_month=base_cost - cost,
        status="solved" if proven else "feasible",
        gap=None if proven else plan.solver.mip_gap,
        total_gpus=plan.total_gpus,
        servers=servers_bought(plan),
        whole_servers=buys_whole_servers(plan),
        uncertain=uncertain_pools(plan),
    )


def _no_plan(name: str, status: str, reason: str) -> LeverResult:
    return LeverResult(
        lever=name, cost_per_month=None, saving_per_month=None, status=status, reason=reason
    )


def rounding_note(result: LeverResult, base: Plan) -> str:
    """ "rounded to whole servers: N GPUs saved, 0 servers" where a lever moves the GPUs in
    use but neither the servers bought nor the bill (it saves less than a cent); else "".
    """
    if result.total_gpus is None or result.saving_per_month is None:
        return ""
    if not (result.whole_servers or buys_whole_servers(base)):
        return ""
    moved = (base.total_gpus or 0) - result.total_gpus
    if not moved or result.servers != servers_bought(base) or abs(result.saving_per_month) >= 0.01:
        return ""
    gpus = f"{abs(moved)} GPU{'s' if abs(moved) != 1 else ''}"
    return f"rounded to whole servers: {gpus} {'saved' if moved > 0 else 'more'}, 0 servers"


def rank_levers(
    instance: Instance,
    base: Plan,
    backend: str | None = None,
    jobs: int = 1,
    on_done: Callable[[LeverResult], None] | None = None,
    start: Mapping[str, float] | None = None,
    time_limit_s: float | None = None,
) -> tuple[LeverResult, ...]:
    """Every applicable lever re-solved, largest saving first (no plan: last).

    Args:
        instance: The base instance.
        base: The base plan (its $/month is what savings are measured from; its GPUs and
            servers what the rounding note compares with).
        backend: Solver backend (default: the instance's).
        jobs: Re-solves in parallel (spawn-context processes, one solver thread each).
        on_done: Called with each result as it finishes (progress).
        start: The base plan's column values (`Solved.result.values`): every static
            re-solve starts from them (the module text). None: each starts on its own.
        time_limit_s: The levers' one time limit, shared as the module text says; None
            (the default): each lever gets the instance's whole `solver.time_limit_s`.
    """
    base_cost = base.cost_per_month or 0.0
    work = []
    for lever in levers_for(instance):
        try:
            changed = lever.apply(instance)
        except InputError:
            continue  # the change makes an invalid instance: not a lever here
        if changed is not None:
            work.append((lever.name, changed))
    # longest first, as far as size tells: a lever offering more GPU types has the larger
    # program, and the longest re-solve starting last would run alone at the end
    work.sort(key=lambda named: -len(named[1].gpus))
    if uses_time(instance):
        start = None  # the periods program starts on its own (solver.decompose.by_period)
    limit_s = time_limit_s
    floor_s = MIN_SHARE_S
    if start is None:  # no base plan in hand: a share must let the lever find one
        floor_s = max(floor_s, BASE_SOLVES * (base.solver.runtime_s if base.solver else 0.0))
    if limit_s is not None:
        floor_s = min(floor_s, limit_s)
    shares = Shares(Deadline.starting_now(limit_s), max(jobs, 1), len(work), floor_s)
    results: list[LeverResult] = []

    def done(result: LeverResult) -> None:
        results.append(result)
        if on_done:
            on_done(result)

    if jobs <= 1 or len(work) <= 1:
        for name, changed in work:
            done(solve_lever(name, changed, base_cost, backend, shares.next_s(0), start))
    else:
        with process_pool(jobs) as pool:
            waiting = list(work)
            running = set()
            while waiting or running:
                while waiting and len(running) < jobs:
                    name, changed = waiting.pop(0)
                    share_s = shares.next_s(len(running))
                    args = (name, changed, base_cost, backend, share_s, start)
                    running.add(pool.submit(solve_lever, *args))
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    done(future.result())
    noted = (r.model_copy(update={"note": rounding_note(r, base)}) for r in results)
    return tuple(sorted(noted, key=_rank))


MIN_SHARE_S = 1.0
"""Least time limit a lever's re-solve is given, whatever is left (a solve needs its
candidates and program before it can stop with a plan)."""
BASE_SOLVES = 2.0
"""A lever with no base plan to start from (an hourly or month plan's) gets at least this
many times the base plan's own solve (at most the time limit): it is the base's program
with one change, and a share below what the base took would stop most such levers with
no plan at all. So these levers may pass their deadline, by at most rounds of this."""


@dataclass
class Shares:
    """The levers' one deadline, handed out as each lever starts: what is left, over the
    rounds of `jobs` levers still to end (those not started, this one included, and
    those running beside it),

        share = left / ceil((not started + running) / jobs),   at least `floor_s`."""

    deadline: Deadline
    jobs: int
    not_started: int
    floor_s: float = MIN_SHARE_S

    def next_s(self, running: int) -> float | None:
        """The time limit of the next lever to start, `running` others running beside it
        (None: no limit)."""
        left = self.deadline.remaining_s()
        rounds = max(math.ceil((self.not_started + running) / self.jobs), 1)
        self.not_started -= 1
        return None if left is None else max(left / rounds, self.floor_s)


def _rank(result: LeverResult) -> tuple[bool, float, str]:
    saving = result.saving_per_month
    return (saving is None, -(saving or 0.0), result.lever)
