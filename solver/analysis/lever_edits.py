"""The levers: each a pure function Instance -> Instance (or None where it does not
apply), named as the report shows it (solver.analysis.levers re-solves and ranks them).

Shadow prices say where to look (the marginal $ of one more unit of a right-hand side);
a lever is a discrete change of the question itself, and only a re-solve says what it is
worth. Each lever is a pure function Instance -> Instance (or None where it does not
apply): the instance's set keys are dumped, one thing changed, and the result validated
again as a new Instance (`models.io.loading.validate_instance`), so a lever's instance is
exactly what a user would get by editing the file the same way.

The levers (names are what the report shows):

- `prefix-cache hit +10 points`: every workload's prefix-cache hit rate + 0.10 (capped
  below 1), but for a workload whose declared prefixes set its rate (no explicit
  `prefix_cache_hit_rate`), which has no one number to raise.
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
- `power +1 server`: every region's `power_kw` cap raised by one server of the hungriest
  GPU type it offers (`gpus_per_node` x one GPU's facility kW), so one more server of any
  of its types fits: what a cap that binds in whole units costs (the binding report
  says "not priced" there: solver.plan.binding).

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
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.io.loading import validate_instance
from models.operations.site import gpu_kw, offered
from models.operations.time_demand import failover_window_s, uses_time
from models.physics import catalog
from models.physics.memory import kv_precision_for
from models.physics.precision import Precision
from models.schema.errors import InputError
from models.schema.instance import Instance
from models.schema.policy import Survive

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
    """A named instance transformation. `relaxes`: every plan of the instance is a plan
    of the changed one at the same cost (an option added, a target or requirement
    loosened), so the lever never costs more than the base plan. `offers`: the GPU type
    an `allow GPU` lever offers (such levers may be proven together:
    solver.analysis.lever_groups)."""

    name: str
    apply: Transform
    relaxes: bool = False
    offers: str | None = None


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
    """Every workload's prefix-cache hit rate + 10 points (at most 0.99). A workload whose
    declared `prefixes` set its hit rate (no explicit `prefix_cache_hit_rate`: the rate is
    where the prefixes live, pool by pool) is left as it is: a rate written for it would
    replace the derived one, and 0 + 10 points read a 70% rate as 10%."""

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for entry, workload in zip(_workloads(data), instance.workloads, strict=True):
            if _hit_rate_from_prefixes(workload):
                continue
            hit = min(workload.prefix_cache_hit_rate + HIT_RATE_STEP, HIT_RATE_CEILING)
            if hit > workload.prefix_cache_hit_rate:
                entry["prefix_cache_hit_rate"] = hit
                changed = True
        return changed

    return _edited(instance, edit)


def _hit_rate_from_prefixes(workload) -> bool:
    """Whether the workload's declared prefixes set its hit rate (models.schema.instance:
    prefixes without an explicit prefix_cache_hit_rate)."""
    return bool(workload.prefixes) and "prefix_cache_hit_rate" not in workload.model_fields_set


def current_kv_precision(instance: Instance, model: str) -> Precision:
    """The lowest KV precision a model's replicas can use today: the KV rule
    (`models.physics.memory.kv_precision_for`: its `kv_precision`, else its lowest weight
    precision's, never below fp8)."""
    entry = instance.model_entry(model)
    lowest = min(entry.weight_precisions, key=lambda p: p.bytes_per_element)
    return kv_precision_for(lowest, entry.kv_precision)


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


def more_power(instance: Instance) -> Instance | None:
    """Every region with a `power_kw` cap: the cap plus one server of the hungriest GPU
    type the region offers, gpus_per_node x `gpu_kw` (tdp x server factor x PUE), so
    one more server of any type it offers fits. None where no region sets a cap."""
    server_kw: dict[str, float] = {}
    for region, gpu in offered(instance):
        kw = instance.gpu_specs[gpu].gpus_per_node * gpu_kw(instance, region.name, gpu)
        server_kw[region.name] = max(server_kw.get(region.name, 0.0), kw)

    def edit(data: dict[str, Any]) -> bool:
        changed = False
        for region in data["regions"]:
            if region.get("power_kw") is not None and region["name"] in server_kw:
                region["power_kw"] = region["power_kw"] + server_kw[region["name"]]
                changed = True
        return changed

    return _edited(instance, edit)


def time_levers(instance: Instance) -> list[Lever]:
    """The levers of time (hourly instances only; see the module text)."""
    if not uses_time(instance):
        return []
    return [
        Lever("daily profile flattened", flatten_day),
        Lever("failover start -50%", faster_failover_start, relaxes=True),
        Lever(
            "lift on-demand caps", supply_edit("max_on_demand_gpus", lambda _: None), relaxes=True
        ),
        Lever(
            "reserved price -10%",
            supply_edit("reserved_price_per_gpu_hour", lambda p: RESERVED_DISCOUNT * p),
        ),
        Lever("interactive spot (99%)", interactive_spot, relaxes=True),
    ]


def levers_for(instance: Instance) -> list[Lever]:
    """Every lever that applies to the instance (`_applies`), in the module docstring's
    order."""
    levers = [
        Lever("prefix-cache hit +10 points", more_prefix_hits),
        Lever(lower_kv_name(instance), lower_kv),
        Lever("precision one step down", precision_step_down, relaxes=True),
        Lever("TTFT +20%", looser_slo("ttft_p99_ms"), relaxes=True),
        Lever("TPOT +20%", looser_slo("tpot_p99_ms"), relaxes=True),
        Lever("allow disaggregation", policy_switch("disaggregation"), relaxes=True),
        Lever("allow co-location", policy_switch("colocation"), relaxes=True),
        Lever("credit TPOT pooling", policy_switch("credit_tpot_pooling"), relaxes=True),
        *(
            Lever(f"allow {gpu}", allow_gpu(gpu), relaxes=True, offers=gpu)
            for gpu in catalog.gpu_catalog()
        ),
        Lever(f"drop survive: {instance.policy.survive}", drop_failure_requirement, relaxes=True),
        Lever("power +1 server", more_power, relaxes=True),
        *time_levers(instance),
    ]
    return [lever for lever in levers if _applies(lever, instance)]


def _applies(lever: Lever, instance: Instance) -> bool:
    """Whether the lever changes the instance into a valid one (a change the instance's
    own rules refuse, e.g. a looser TTFT beside a voice budget that derives it, is not a
    lever here: it would end the command with the lever's input error)."""
    try:
        return lever.apply(instance) is not None
    except InputError:
        return False


@dataclass(frozen=True)
class LeverWork:
    """One lever to re-solve: its name and its instance."""

    name: str
    instance: Instance
    relaxes: bool = False
    """The lever only loosens the question (`Lever.relaxes`)."""
    offers: str | None = None
    """The GPU type an `allow GPU` lever offers (`Lever.offers`)."""


def lever_work(instance: Instance) -> list[LeverWork]:
    """The applicable levers' instances, longest re-solve first as far as the instance
    tells (`_longest_first`)."""
    work = [
        LeverWork(lever.name, lever.apply(instance), lever.relaxes, lever.offers)
        for lever in levers_for(instance)
    ]
    return sorted(work, key=lambda item: _longest_first(instance, item.instance))


def _longest_first(base: Instance, changed: Instance) -> tuple[int, int]:
    """The order key: more GPU types first (the larger program), then the new type's
    smaller server first (`gpus_per_node`: a finer server leaves the whole-server
    rounding more ways to pay off, so the search takes longer to prove it does not), so
    that the longest re-solve does not start last and run alone at the end of `jobs`
    workers."""
    offered = {gpu.name for gpu in base.gpus}
    new = [spec.gpus_per_node for name, spec in changed.gpu_specs.items() if name not in offered]
    return -len(changed.gpus), min(new, default=0)
