"""Warm and cold pools: a workload with per-customer prefixes split into the requests that
reuse a prefix (warm) and those that do not (cold), each served by its own pools.

A declared prefix on every request (share 1, e.g. a system prompt) is held by every
replica of either pool. The others steer: a request carrying one is warm. With the
steering prefixes' total share

    w = sum over steering entries of share x count        (0 < w < 1 to split)

the workload becomes two, on the same model, prompt and output mix and SLO:

- `<name>-warm`: w of the demand in every region; the universal prefixes, and each
  steering prefix at share / w (every warm request carries one);
- `<name>-cold`: (1 - w) of the demand; the universal prefixes only.

The prompt length distribution is taken to be the same in both (the prefixes are part
of the prompt, as `models.serving.prefix_routing` assumes). The warm pool holds the documents
and prefills only the new tokens; the cold pool holds no documents, so its KV goes to
the running batch, and it prefills long prompts: each is sized for its own share and
physics. A workload is split only when its hit rate comes from its prefixes (no
explicit `prefix_cache_hit_rate`), it is interactive, its split halves validate, and
their names are free.
"""

from pydantic import ValidationError

from models.schema.instance import Instance, Workload
from models.schema.traffic import Demand

WARM_SUFFIX = "-warm"
COLD_SUFFIX = "-cold"


def steering_share(workload: Workload) -> float:
    """w: the share of requests that carry a prefix not on every request."""
    return sum(p.share * p.count for p in workload.prefixes if p.share < 1)


def _scaled(demand: Demand, factor: float) -> Demand:
    """The same demand shape at `factor` of its volume."""
    update = {}
    if demand.requests_per_day is not None:
        update["requests_per_day"] = demand.requests_per_day * factor
    if demand.peak_requests_per_s is not None:
        update["peak_requests_per_s"] = demand.peak_requests_per_s * factor
    return demand.model_copy(update=update)


def split_workload(workload: Workload) -> tuple[Workload, Workload] | None:
    """The warm and cold halves of `workload` (see the module docstring), or None when it
    is not split."""
    w = steering_share(workload)
    if workload.is_batch or "prefix_cache_hit_rate" in workload.model_fields_set or not 0 < w < 1:
        return None
    data = workload.model_dump(exclude_unset=True)
    universal = [p.model_dump() for p in workload.prefixes if p.share >= 1]
    steering = [
        {**p.model_dump(), "share": min(p.share / w, 1.0)} for p in workload.prefixes if p.share < 1
    ]
    halves = []
    for suffix, factor, prefixes in (
        (WARM_SUFFIX, w, universal + steering),
        (COLD_SUFFIX, 1 - w, universal),
    ):
        demand = {
            r: _scaled(d, factor).model_dump(exclude_unset=True) for r, d in workload.demand.items()
        }
        try:
            halves.append(
                Workload.model_validate(
                    {**data, "name": workload.name + suffix, "demand": demand, "prefixes": prefixes}
                )
            )
        except ValidationError:
            return None
    return halves[0], halves[1]


def splittable(instance: Instance) -> tuple[str, ...]:
    """The workloads `warm_cold_instance` splits: those with halves whose names are free
    (empty unless `policy.warm_cold_split`)."""
    if not instance.policy.warm_cold_split:
        return ()
    names = {w.name for w in instance.workloads}
    return tuple(
        w.name
        for w in instance.workloads
        if split_workload(w) is not None
        and not {w.name + WARM_SUFFIX, w.name + COLD_SUFFIX} & names
    )


def warm_cold_instance(instance: Instance, workloads: tuple[str, ...]) -> Instance:
    """The instance with each of `workloads` replaced by its warm and cold halves.

    Raises:
        ValueError: a named workload is not in the instance or cannot be split.
    """
    names = {w.name for w in instance.workloads}
    missing = sorted(set(workloads) - names)
    if missing:
        raise ValueError(f"warm_cold_split names workloads not in the instance: {missing}")
    out: list[Workload] = []
    for workload in instance.workloads:
        if workload.name not in workloads:
            out.append(workload)
            continue
        halves = split_workload(workload)
        if halves is None:
            raise ValueError(f"workload {workload.name!r} cannot be split into warm and cold")
        out.extend(halves)
    return instance.model_copy(update={"workloads": out})


def warm_share(instance: Instance, name: str) -> float:
    """w of a workload of `instance` (0 when it declares no steering prefix)."""
    return steering_share(instance.workload(name))
