"""Checks across an instance's sections: `cross_check` collects every cross-reference
problem at once (as field path and message), `input_warnings` what in a valid instance is
probably not what its author meant."""

import unicodedata
from collections.abc import Collection

from pydantic import ValidationError

from models.io.hf_config import HfConfigError
from models.physics import catalog
from models.physics.efficiency import (
    UnknownEngine,
    calibration_table,
    check_engine,
    generation_of,
    profile_engine,
)
from models.physics.overlap import (
    LAYOUT_RULES,
    engine_runs_overlap,
    overlap_condition,
    runnable_layouts,
    unrunnable_values,
)
from models.schema import limits
from models.schema.catalog_entries import resolve_gpu, resolve_llm
from models.schema.errors import shown_name
from models.schema.instance import Instance
from models.schema.policy import BuyUnit, Survive

_ADAPTER_KEYS = {"name", "base", "rank", "weight_precisions", "kv_precision"}
"""Keys an adapter entry may carry: every architecture field comes from its base."""


FieldPath = tuple[str | int, ...]


def input_warnings(instance: Instance, replaced: Collection[str] = ()) -> list[str]:
    """What in a valid instance is probably not what its author meant, one line each
    (the command line prints them on stderr; the plan is unchanged). Nothing is said of
    a field in `replaced`, which a command-line flag replaces (`solve --threads` replaces
    `solver.threads`, and says its own warning).

    A `requests_per_day` with neither `peak_to_average` nor an `hourly_profile` plans for
    the daily average rate (peak factor 1): every hour at the average, so the fleet falls
    short at any peak above it. Batch work (`deadline_hours`) is sized by its daily volume
    and deadline, not by a peak, so it is not warned about.
    """
    warnings = []
    for workload in instance.workloads:
        if workload.is_batch:
            continue
        for region, demand in workload.demand.items():
            daily_only = (
                demand.requests_per_day is not None
                and demand.hourly_profile is None
                and "peak_to_average" not in demand.model_fields_set
            )
            if daily_only:
                warnings.append(
                    f"workloads[{workload.name}].demand.{region}: requests_per_day without "
                    f"peak_to_average or hourly_profile sizes {workload.name} for the daily "
                    f"average ({demand.peak_rps:,.3g} requests/s); traffic that peaks above "
                    "it is not served at the SLO: give peak_to_average or an hourly_profile"
                )
    return (
        warnings
        + _hbm_only_warnings(instance)
        + _growth_without_horizon(instance)
        + _horizon_without_hours(instance)
        + _part_servers(instance)
        + _policy_without_effect(instance)
        + _dearer_than_on_demand(instance)
        + ([] if "solver.threads" in replaced else _threads_above_cores(instance))
    )


def _threads_above_cores(instance: Instance) -> list[str]:
    """`solver.threads` above this machine's CPU count: valid (the instance may be written
    for a bigger machine), but the solver runs only as many threads as there are CPUs."""
    threads, cores = instance.solver.threads, limits.max_threads()
    return [threads_above_cores("solver.threads", threads, cores)] if threads > cores else []


def threads_above_cores(name: str, threads: int, cores: int) -> str:
    """The warning for `threads` asked of `name` (a field or a flag) on `cores` CPUs."""
    return (
        f"{name}: {threads:,} is more than this machine's {cores} CPUs; the solver runs "
        f"{cores} threads"
    )


def _dearer_than_on_demand(instance: Instance) -> list[str]:
    """A reserved or spot price above the on-demand price of the same offer, where on
    demand is not capped (`max_on_demand_gpus`): a commitment paid every hour, or a spot
    GPU that is also taken back, never beats renting by the hour, so the offer was
    dropped without a word (a reserved 5.00 beside an on-demand 2.40 planned as if
    absent)."""
    warnings = []
    for region in instance.regions:
        for gpu, offer in region.supply.items():
            if offer.max_on_demand_gpus is not None:
                continue  # a capped rental may need the dearer offer beside it
            on_demand = instance.price_per_gpu_hour(region.name, gpu)
            for key, what in (("reserved", "a commitment paid every hour"),
                              ("spot", "an interruptible GPU")):  # fmt: skip
                price = getattr(offer, f"{key}_price_per_gpu_hour")
                if price is not None and price > on_demand:
                    warnings.append(
                        f"regions[{region.name}].supply.{gpu}.{key}_price_per_gpu_hour: "
                        f"{price:g} is above the on-demand {on_demand:g} USD/GPU-hour: {what} "
                        "at it never beats renting by the hour, so none is planned; check "
                        "the prices"
                    )
    return warnings


def _policy_without_effect(instance: Instance) -> list[str]:
    """Policy switches that refine another the instance lacks, and so were dropped without
    a word: `multi_lora` shares engines only under `colocation`; `spot_confidence` puts
    interactive pools on spot only where a supply entry prices spot; `prefix_affinity`
    routes declared `prefixes` only; `failover_start_s` times the spare's start after a
    loss `survive: none` never plans for; `expert_parallel`, `attention_data_parallel` and
    `redundant_experts` lay out the experts of MoE models only
    (`models.physics.memory.expert_layout_problem`), and `efficiency.two_batch_overlap`
    overlaps their experts' all-to-all on the layouts the engine profile's engine runs it
    on (`models.physics.overlap.engine_runs_overlap`: vLLM at attention DP and EP above 1,
    SGLang at EP = TP x DP above 1, TensorRT-LLM never); an `expert_parallel` or
    `attention_data_parallel` value that the engine profile's engine runs in no layout
    of the grid is never planned (`models.physics.overlap.engine_layout_problem`: vLLM's
    EP is 1 or TP x DP, TensorRT-LLM's attention DP needs TP 1)."""
    policy = instance.policy
    moe = any(instance.llm_specs[w.model].is_moe for w in instance.workloads)
    overlap = instance.efficiency is not None and bool(instance.efficiency.two_batch_overlap)
    overlap_why = _overlap_unused(instance, moe) if overlap else None
    profile, engine = (profile_engine(instance.engine) if moe else None) or ("", None)
    unrun = unrunnable_values(
        engine, policy.tensor_parallel, policy.attention_data_parallel, policy.expert_parallel
    )
    unrun_why = (
        f"engine profile {profile} runs it in no layout of the grid: "
        f"{LAYOUT_RULES.get(engine or '', '')} "
        f"(policy.tensor_parallel {sorted(set(policy.tensor_parallel))}, "
        f"attention_data_parallel {sorted(set(policy.attention_data_parallel))})"
    )
    layouts = [
        (f"policy.{key}: {sorted(set(getattr(policy, key)))}", key)
        for key in ("expert_parallel", "attention_data_parallel")
    ]
    spot = any(
        offer.spot_price_per_gpu_hour is not None
        for region in instance.regions
        for offer in region.supply.values()
    )
    dropped = [
        ("policy.multi_lora: true", policy.multi_lora and not policy.colocation,
         "policy.colocation is off (adapters share an engine only in co-located groups)"),
        (f"policy.spot_confidence: {policy.spot_confidence:g}" if policy.spot_confidence else "",
         policy.spot_confidence is not None and not spot,
         "no supply entry offers spot (spot_price_per_gpu_hour)"),
        ("policy.prefix_affinity: true",
         policy.prefix_affinity and not any(w.prefixes for w in instance.workloads),
         "no workload declares prefixes to route by"),
        ("policy.warm_cold_split: true",
         policy.warm_cold_split and not any(w.prefixes for w in instance.workloads),
         "no workload declares prefixes to split warm from cold by"),
        (f"policy.failover_start_s: {policy.failover_start_s:g}"
         if policy.failover_start_s is not None else "",
         policy.failover_start_s is not None and policy.survive is Survive.NONE,
         "policy.survive is none (no loss is planned for, so no spare starts after one)"),
    ] + [
        (text, not moe and set(getattr(policy, key)) != {1},
         "no workload's model is a mixture of experts (a dense model runs plain TP x PP)")
        for text, key in layouts
    ] + [
        (f"policy.redundant_experts: {sorted(set(policy.redundant_experts))}",
         set(policy.redundant_experts) != {0} and (not moe or set(policy.expert_parallel) == {1}),
         "redundant expert copies need an MoE model and a policy.expert_parallel above 1"),
        ("efficiency.two_batch_overlap: true", overlap_why is not None, overlap_why or ""),
    ] + [
        (f"policy.{key}: {values}", bool(values), unrun_why) for key, values in unrun.items()
    ]  # fmt: skip
    return [f"{text} has no effect: {why}" for text, unused, why in dropped if unused]


def _overlap_unused(instance: Instance, moe: bool) -> str | None:
    """Why `efficiency.two_batch_overlap` changes no layout of the policy's grid (TP x
    attention DP x EP, EP dividing TP x DP, run as laid out by the profile's engine), or
    None where one runs it under the instance's engine profile (an unknown profile is
    `cross_check`'s to report)."""
    if not moe:
        return "no workload's model is a mixture of experts (it overlaps the experts' all-to-all)"
    named = profile_engine(instance.engine)
    if named is None:
        return None
    profile, engine = named
    policy = instance.policy
    grid = runnable_layouts(
        engine, policy.tensor_parallel, policy.attention_data_parallel, policy.expert_parallel
    )
    if any(engine_runs_overlap(engine, tp, dp, ep) for tp, dp, ep in grid):
        return None
    return (
        f"no layout runs it under engine profile {profile}: {overlap_condition(engine)} "
        f"(policy.tensor_parallel {sorted(set(policy.tensor_parallel))}, "
        f"attention_data_parallel {sorted(set(policy.attention_data_parallel))}, "
        f"expert_parallel {sorted(set(policy.expert_parallel))})"
    )


def _too_little_demand(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Each workload's peak in each region, times demand_growth, at least
    `limits.LEAST_PEAK_RPS`: below the solver's tolerance the demand is planned no GPU."""
    growth = instance.demand_growth or instance.policy.demand_growth or 1.0
    problems = []
    for index, workload in enumerate(instance.workloads):
        for region, demand in workload.demand.items():
            peak = demand.peak_rps * growth
            if peak < limits.LEAST_PEAK_RPS:
                problems.append(
                    (
                        ("workloads", index, "demand", region),
                        f"a peak of {peak:.3g} requests/s"
                        + (f" (x demand_growth {growth:g})" if growth != 1.0 else "")
                        + f" is below {limits.LEAST_PEAK_RPS:g} requests/s (LEAST_PEAK_RPS in "
                        "models/schema/limits.py): the solver's tolerance would plan no GPU "
                        "for it; give the real rate, or drop the region",
                    )
                )
    return problems


def _part_servers(instance: Instance) -> list[str]:
    """With whole servers (policy.buy_unit node) at most floor(max_gpus / gpus_per_node)
    servers can be bought: an offer that is not a whole number of servers loses the rest,
    and one smaller than a server offers nothing (64 GB200s, 72 a server)."""
    if instance.policy.buy_unit is not BuyUnit.NODE:
        return []
    warnings = []
    for region in instance.regions:
        for gpu, supply in region.supply.items():
            per_server = instance.gpu_specs[gpu].gpus_per_node
            if per_server <= 1 or supply.max_gpus % per_server == 0:
                continue
            servers = supply.max_gpus // per_server
            warnings.append(
                f"regions[{region.name}].supply.{gpu}.max_gpus: {supply.max_gpus:,} is not a "
                f"whole number of {per_server}-GPU servers (policy.buy_unit: node): at most "
                f"{servers:,} server{'s' if servers != 1 else ''} ({servers * per_server:,} "
                f"GPUs) can be bought there; offer a multiple of {per_server} or set "
                "policy.buy_unit: gpu"
            )
    return warnings


def _growth_without_horizon(instance: Instance) -> list[str]:
    """Growth and lead times plan months; without `policy.horizon_months` there are none,
    and the values were dropped without a word."""
    if instance.policy.horizon_months is not None:
        return []
    given = [
        f"policy.{key}: {getattr(instance.policy, key):g}"
        for key in ("monthly_growth", "lead_time_months")
        if getattr(instance.policy, key)
    ] + [
        f"workloads[{w.name}].monthly_growth: {w.monthly_growth:g}"
        for w in instance.workloads
        if w.monthly_growth
    ]
    return [
        f"{text} has no effect without policy.horizon_months (the months to plan); the "
        "plan is of today's demand alone: give horizon_months or drop it"
        for text in given
    ]


def _horizon_without_hours(instance: Instance) -> list[str]:
    """Months are planned on the hourly program (solver.time.horizon): an instance with no
    `hourly_profile` and no reserved or spot price is planned static, one month at
    today's demand, and `policy.horizon_months` (with its growth and lead time) was
    dropped without a word (`Instance.asks_for_hours`, the condition of
    models.operations.time_demand.uses_time)."""
    if instance.asks_for_hours():
        return []
    policy = instance.policy
    hourly = "(an hourly_profile on some demand, or a reserved or spot price on some supply)"
    months = policy.horizon_months
    warnings = [
        f"policy.{key}: {getattr(policy, key):g} has no effect on a static plan: the warm "
        f"headroom an autoscaler needs is planned for an hourly plan {hourly}"
        for key in ("burst_factor", "scale_detection_s")
        if key in policy.model_fields_set  # used by models.operations.time_periods only
    ]
    if months is not None:
        warnings.append(
            f"policy.horizon_months: {months} has no effect on a static plan: months are "
            f"planned for an hourly plan {hourly}; the plan is of today's demand alone, "
            "growth not applied"
        )
    return warnings


def _hbm_only_warnings(instance: Instance) -> list[str]:
    """A GPU that holds declared prefixes in HBM alone while the catalog knows its
    server's host DRAM and NVMe: tiers are opt-in (`kv_tiers_from_server`), say so."""
    if not any(workload.prefixes for workload in instance.workloads):
        return []
    warnings = []
    for name, gpu in instance.gpu_specs.items():
        unset = gpu.host_memory_gib_per_gpu is None and gpu.nvme_tb_per_node is None
        if unset and gpu.server_host_memory_gib_per_gpu is not None:
            warnings.append(
                f"gpus[{name}]: declared prefixes are held in HBM only; the catalog's "
                f"{gpu.server} has {gpu.server_host_memory_gib_per_gpu:g} GiB host DRAM per "
                f"GPU and {gpu.server_nvme_tb_per_node or 0:g} TB NVMe per node: set "
                "kv_tiers_from_server: true (or host_memory_gib_per_gpu, nvme_tb_per_node) "
                "to plan with them"
            )
    return warnings


def _as_printed(name: str) -> str:
    """`name` as a table prints it: format characters (zero-width space and joiners, the
    byte-order mark, direction marks) dropped, surrounding whitespace stripped, and an
    accent written as a combining mark composed with its letter ('e' + U+0301 prints as
    'é' does: Unicode's normal form C)."""
    visible = "".join(c for c in name if unicodedata.category(c) != "Cf").strip()
    return unicodedata.normalize("NFC", visible)


def cross_check(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Every cross-reference problem in the instance, as (field path, message) pairs."""
    problems: list[tuple[FieldPath, str]] = []
    add = problems.append

    for section in ("gpus", "models", "regions", "workloads"):
        seen: dict[str, str] = {}
        for index, item in enumerate(getattr(instance, section)):
            shown = _as_printed(item.name)
            if not shown:
                add(
                    (
                        (section, index, "name"),
                        f"{item.name!r} prints as nothing (spaces or invisible characters "
                        "only): every table would show an empty cell; give it a name",
                    )
                )
            elif item.name in seen.values():
                add(((section, index, "name"), f"duplicate name {item.name!r}"))
            elif shown in seen:
                add(
                    (
                        (section, index, "name"),
                        f"{item.name!r} prints as {seen[shown]!r} does (they differ only in "
                        "invisible characters or surrounding spaces): no report could tell "
                        "them apart; give each a name of its own",
                    )
                )
            seen.setdefault(shown, item.name)

    for index, entry in enumerate(instance.gpus):
        try:
            resolve_gpu(entry)
        except ValidationError as error:
            add((("gpus", index), _inline_message("GPU", entry.name, error, catalog.gpu_catalog())))
    problems.extend(_efficiency_problems(instance))
    problems.extend(_adapter_problems(instance))
    problems.extend(_too_little_demand(instance))
    for index, entry in enumerate(instance.models):
        if entry.is_adapter:
            continue
        try:
            resolve_llm(entry)
        except HfConfigError as error:
            add((("models", index, "config"), str(error)))
        except ValidationError as error:
            add(
                (
                    ("models", index),
                    _inline_message("model", entry.name, error, catalog.llm_catalog()),
                )
            )

    gpu_names = [entry.name for entry in instance.gpus]
    region_names = [region.name for region in instance.regions]
    model_names = [entry.name for entry in instance.models]

    for r_index, region in enumerate(instance.regions):
        for key in ("supply", "existing"):
            for gpu_name in getattr(region, key):
                if gpu_name not in gpu_names:
                    add((("regions", r_index, key, gpu_name), _unknown("GPU", gpu_name, gpu_names)))
        for gpu_name, offer in region.supply.items():
            if offer.max_on_demand_gpus is not None and offer.max_on_demand_gpus > offer.max_gpus:
                add(
                    (
                        ("regions", r_index, "supply", gpu_name, "max_on_demand_gpus"),
                        f"{offer.max_on_demand_gpus} exceeds max_gpus ({offer.max_gpus})",
                    )
                )
        for gpu_name, count in region.existing.items():
            if count < 0:
                add((("regions", r_index, "existing", gpu_name), f"must be >= 0, got {count}"))
        if instance.policy.survive is Survive.ZONE and region.zones < 2:
            add((("regions", r_index, "zones"), "survive: zone needs at least 2 zones per region"))

    first_link: dict[frozenset[str], int] = {}
    for l_index, (a, b, rtt_ms) in enumerate(instance.links):
        pair = frozenset((a, b))
        if pair in first_link and a != b:  # one round trip per pair: which would win?
            add(
                (
                    ("links", l_index),
                    f"links[{first_link[pair]}] already joins {a} and {b}: give each pair "
                    "of regions one round trip",
                )
            )
        first_link.setdefault(pair, l_index)
        for position, end in enumerate((a, b)):
            if end not in region_names:
                add((("links", l_index, position), _unknown("region", end, region_names)))
        if a == b:
            add((("links", l_index), f"a link joins two different regions, got {a!r} twice"))
        if rtt_ms < 0:
            add((("links", l_index, 2), f"round-trip ms must be >= 0, got {rtt_ms:g}"))

    for w_index, workload in enumerate(instance.workloads):
        if workload.model not in model_names:
            add((("workloads", w_index, "model"), _unknown("model", workload.model, model_names)))
        for region_name in workload.demand:
            if region_name not in region_names:
                add(
                    (
                        ("workloads", w_index, "demand", region_name),
                        _unknown("region", region_name, region_names),
                    )
                )

    for p_index, degree in enumerate(instance.policy.tensor_parallel):
        if degree < 1 or degree & (degree - 1):
            add((("policy", "tensor_parallel", p_index), f"must be a power of two, got {degree}"))
    for p_index, degree in enumerate(instance.policy.pipeline_parallel):
        if degree < 1:
            add((("policy", "pipeline_parallel", p_index), f"must be >= 1, got {degree}"))
    if instance.policy.survive is Survive.REGION and len(instance.regions) < 2:
        add((("policy", "survive"), "survive: region needs at least two regions"))
    drafts = model_names + [name for name in catalog.llm_catalog() if name not in model_names]
    option_names: set[str] = set()
    for o_index, option in enumerate(instance.policy.speculative):
        if option.name in option_names:
            add((("policy", "speculative", o_index, "name"), f"duplicate name {option.name!r}"))
        option_names.add(option.name)
        if option.draft_model is not None and option.draft_model not in drafts:
            add(
                (
                    ("policy", "speculative", o_index, "draft_model"),
                    _unknown("model", option.draft_model, drafts),
                )
            )
    if not problems:  # every model resolves: their experts can be counted
        problems.extend(_redundant_expert_problems(instance))
    return problems


def _redundant_expert_problems(instance: Instance) -> list[tuple[FieldPath, str]]:
    """`policy.redundant_experts` beyond one copy of every routed expert of every MoE model
    the workloads serve: no layout could hold it (`expert_layout_problem`), and without
    this the plan would only say that no configuration fits."""
    experts = [instance.llm_specs[w.model].experts for w in instance.workloads]
    most = max((count for count in experts if count), default=0)
    return [
        (
            ("policy", "redundant_experts", index),
            f"{count} redundant experts is more than one copy of each of the {most} routed "
            "experts of the largest MoE model served; use at most that",
        )
        for index, count in enumerate(instance.policy.redundant_experts)
        if most and count > most
    ]


def _efficiency_problems(instance: Instance) -> list[tuple[FieldPath, str]]:
    """An unknown `engine` profile; an `efficiency_like` that names no calibrated GPU."""
    problems: list[tuple[FieldPath, str]] = []
    try:
        check_engine(instance.engine)
    except UnknownEngine as error:
        problems.append((("engine",), str(error)))
    calibrated = sorted(calibration_table().get("generation_of", {}))
    for index, entry in enumerate(instance.gpus):
        like = entry.efficiency_like
        if like is not None and generation_of(like) is None:
            problems.append(
                (
                    ("gpus", index, "efficiency_like"),
                    f"{like!r} is not a GPU with calibration rows; choose one of "
                    + ", ".join(calibrated),
                )
            )
    return problems


def _adapter_problems(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Adapters: `base` names a non-adapter model entry or a catalog model, an adapter
    carries no architecture field, and `rank` comes only with `base`."""
    problems: list[tuple[FieldPath, str]] = []
    entries = {entry.name: entry for entry in instance.models}
    known = [name for name, entry in entries.items() if not entry.is_adapter]
    known += [name for name in catalog.llm_catalog() if name not in entries]
    for index, entry in enumerate(instance.models):
        if entry.base is None:
            if entry.rank is not None:
                problems.append(
                    (("models", index, "rank"), "rank is an adapter's LoRA rank: give base too")
                )
            continue
        if entry.base == entry.name:
            problems.append((("models", index, "base"), "an adapter cannot be its own base"))
        elif entry.base in entries and entries[entry.base].is_adapter:
            problems.append(
                (
                    ("models", index, "base"),
                    f"base {entry.base!r} is itself an adapter; name the model it adapts "
                    f"({entries[entry.base].base!r})",
                )
            )
        elif entry.base not in known:
            problems.append((("models", index, "base"), _unknown("base model", entry.base, known)))
        inherited = sorted(
            key for key in entry.model_dump(exclude_none=True) if key not in _ADAPTER_KEYS
        )
        if inherited:
            problems.append(
                (
                    ("models", index, inherited[0]),
                    f"adapter {entry.name!r} inherits the architecture of {entry.base!r}; "
                    f"remove {', '.join(inherited)}",
                )
            )
    return problems


def _unknown(kind: str, name: str, known: list[str]) -> str:
    message = f"unknown {kind} {name!r}"
    close = catalog.closest_name(name, known)
    if close:
        message += f"; did you mean {close!r}?"
    return message + f" (declared: {', '.join(map(shown_name, known)) or 'none'})"


def _inline_message(kind: str, name: str, error: ValidationError, known: dict) -> str:
    details = "; ".join(_detail(item) for item in error.errors())
    if name in known:
        return f"{kind} {name!r}: the catalog entry, as this instance changes it, is invalid: " + (
            details
        )
    return f"{kind} {name!r} is not in the catalog, so it must be defined inline: {details}" + (
        _did_you_mean(name, list(known))
    )


def _detail(item: dict) -> str:
    """One pydantic error as `field: message`; a rule over several fields (an empty
    location) as its message alone, which names them."""
    message = item["msg"].removeprefix("Value error, ")
    where = ".".join(str(part) for part in item["loc"])
    return f"{where}: {message}" if where else message


def _did_you_mean(name: str, known: list[str]) -> str:
    close = catalog.closest_name(name, known, cutoff=0.5)
    return f" (did you mean the catalog's {close!r}?)" if close else ""
