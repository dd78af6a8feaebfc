"""A plan's pools as deployment records: what each engine must be told, how many replicas
run in the normal scenario, how many are the failover spare, and when to scale.

Normal and spare. The plan sizes each pool for its worst failure scenario. In the normal
scenario (`none`) the pool carries its share of its phase's load L (the scenario's load of
the (workload, region, phase), split over the phase's pools in proportion to
count x capacity; in an hourly plan, the counts of the hour its scenarios are stated
for, its busiest, so that a pool not running then is all spare). Its normal size is
the smallest n <= count with

    n x q(n) x u_max >= L          (q(n): capacity per replica in a pool of n, from the
                                    verifier's physics; u_max = policy.max_utilization)

and the spare is count - n (replicas that serve only after a loss elsewhere). A pool with
no normal load keeps no normal replica: all of it is spare. A plan without scenarios (a
fleet written by hand, `{"replicas": [...]}`) states no normal load: all of each pool is
normal.

Scaling signal. As in the headroom report (`solver.time.readback.report.pool_thresholds`,
`models.operations.autoscaling.scaling_thresholds`): the pool's scale-out thresholds on
KV-cache usage and prefill queue depth, read from the physics of a replica in a pool of
its normal size n at C = q(n), with the plan's headroom H for the pool (a plan without an
hourly headroom report has one flat peak hour: H = 0, target u* = 1 - H / (n C) = 1).
Where the M/G/1 prefill lane saturates at u* C (the queue threshold is infinite, as at
u* = 1 on a pooled capacity), the queue trigger is the SLO edge T / S - 1: the last depth
at which the TTFT target still holds. Never GPU utilisation (`GPU_UTILISATION_NOTE`).
A prefill pool scales on queue depth (its work is the prompt queue), a decode pool on
KV-cache usage (its work is the resident sequences), a unified pool on both.

Engine settings (one replica): the batch cap is the resident batch at capacity,
ceil(B(n)) sequences (more would break the TPOT target the capacity holds to), at most the
sequences that fit (a prefill replica: at least the prompts one chunk holds,
ceil(chunk / mean prompt), so that a chunk can fill); tokens per iteration and the
prefill chunk are the efficiency profile's `prefill_chunk_tokens` (the chunk the step
model times); the context cap is the p99 prompt plus the p99 output. The memory split is
the plan's: each engine keeps the profile's `memory_reserve_fraction` of the GPU from
weights and KV cache (or, TensorRT-LLM, gives the KV cache the share of the memory left
after weights and activations that the plan gave it), so the server holds at least the KV
cache the plan's batch needs, whatever the engine's own default (SGLang's keeps 16% of an
H100, where a plan on the TensorRT-LLM profile kept 5%).
"""

import math
from collections import defaultdict
from dataclasses import dataclass

from models.operations.autoscaling import (
    GPU_UTILISATION_NOTE,
    resident_batch,
    scaling_thresholds,
)
from models.schema.instance import Instance
from models.serving.replica import Role
from models.serving.replica_layout import replica_memory_budget
from solver.plan.schema import Plan
from solver.verify.pools import RecomputedPool, recompute_pools


class DeployError(ValueError):
    """A plan that cannot be deployed as given (names what and why)."""


@dataclass(frozen=True)
class Speculative:
    """A pool's speculative decoding: the option, its drafter and k."""

    name: str
    tokens: int
    draft_model: str | None
    """The draft model's name; None for a drafter given by its cost (EAGLE heads, MTP)."""


@dataclass(frozen=True)
class Autoscale:
    """Scale-out thresholds of one replica's metrics (never GPU utilisation)."""

    signals: tuple[str, ...]
    """`queue_depth`, `kv_cache_usage`: the metrics the autoscaler reads."""
    target_utilization: float
    kv_usage_scale_out: float
    """Fraction of the KV cache in use per replica at which the pool grows."""
    queue_depth_scale_out: float
    """Prompts waiting per replica at which the pool grows."""
    queue_depth_slo_edge: float | None
    """Prompts waiting beyond which the TTFT target cannot hold (None: no TTFT target)."""
    headroom_rps: float
    note: str = GPU_UTILISATION_NOTE


@dataclass(frozen=True)
class DeployPool:
    """One pool of the plan as it is deployed."""

    name: str
    """DNS-safe: `chat-us-east-h100-sxm-fp8-tp2pp1-prefill`."""
    workload: str
    model: str
    region: str
    gpu: str
    precision: str
    kv_precision: str
    tp: int
    pp: int
    ep: int
    redundant_experts: int
    """Redundant expert copies per MoE layer (EPLB; 0: none)."""
    expert_slots: int
    """Physical experts per MoE layer, routed + redundant (0 for a dense model)."""
    dp: int
    two_batch_overlap: bool
    """Whether the plan timed the pool's passes as two overlapped micro-batches
    (`Efficiency.overlaps`: the profile's `two_batch_overlap` at a layout its engine runs it
    on); `solver.deploy.engines` writes a target's switch where that engine runs it too."""
    role: str
    replicas: int
    """All the plan's replicas of this pool: normal + spare."""
    normal_replicas: int
    spare_replicas: int
    gpus_per_replica: int
    gpus_per_node: int
    max_batch: int
    """Sequences per replica the engine may run at once (ceil of the batch at capacity)."""
    tokens_per_iteration: int
    chunked_prefill_tokens: int
    memory_reserve_fraction: float
    """Share of each GPU's memory the plan kept from weights, activations and KV cache (the
    efficiency profile's `memory_reserve_fraction`): vLLM's `--gpu-memory-utilization` and
    SGLang's `--mem-fraction-static` are 1 less it."""
    kv_free_fraction: float
    """Share of the memory left after weights and activations that the plan gave the KV
    cache, 1 - reserve / (HBM - weights - activations) of the most loaded GPU: TensorRT-LLM's
    `kv_cache_config.free_gpu_memory_fraction`."""
    max_context_tokens: int
    prefix_caching: bool
    kv_tiers: tuple[str, ...]
    speculative: Speculative | None
    pair: str | None
    """A disaggregated pool's other half (the pool name), None for a unified pool."""
    capacity_rps_per_replica: float
    autoscale: Autoscale
    speculative_option: str | None = None
    started_replicas: int = 0
    """Replicas a region loss starts in this pool after the loss (an hourly plan's
    `hours[].failover_starts`, the most any hour and loss starts): not in `replicas`,
    paid only in a loss; the failover runbook scales the spare object up by them."""

    @property
    def nodes_per_replica(self) -> int:
        """Nodes one replica spans: ceil(gpus per replica / gpus per node)."""
        return math.ceil(self.gpus_per_replica / self.gpus_per_node)

    @property
    def multi_node(self) -> bool:
        """Whether one replica spans several nodes (a LeaderWorkerSet on Kubernetes)."""
        return self.nodes_per_replica > 1


POOL_NAME_CHARS = 57
"""A pool's name is at most 63 - len("-spare") characters, so its spare's fits a
Kubernetes name (63) too."""


def dns_name(*parts: str, limit: int = 63) -> str:
    """Lower-case, `[a-z0-9-]` only, joined by `-`, at most `limit` characters."""
    text = "-".join(parts).lower()
    text = "".join(c if c.isascii() and c.isalnum() else "-" for c in text)
    while "--" in text:
        text = text.replace("--", "-")
    return text.strip("-")[:limit].rstrip("-")


def _phase(pool: RecomputedPool) -> str:
    return "unified" if pool.role is Role.UNIFIED else f"{pool.role}-{pool.precision}"


def normal_loads(plan: Plan) -> dict[tuple[str, str, str], float]:
    """(workload, region, phase) -> requests/s in the normal scenario (`none`)."""
    normal = next((s for s in plan.scenarios if s.name == "none"), None)
    if normal is None:
        return {}
    loads: dict[tuple[str, str, str], float] = {}
    for row in normal.pools:
        loads[(row.workload, row.region, row.phase)] = row.load_requests_per_s
    return loads


def normal_size(pool: RecomputedPool, load_rps: float) -> int:
    """The smallest n <= count with n x q(n) x u_max >= load (0 for no load).

    n x q(n) grows with n (q(n), a replica's capacity in a pool of n behind one queue,
    does not fall as the pool grows), so n is found by bisection: about log2(count)
    pools' physics, where trying n = 1, 2, ... in turn computed count of them (a verified
    plan of 148,524 replicas in one pool ran past 20 s)."""
    if load_rps <= 0:
        return 0
    low, high = 1, pool.count  # carries(high) is checked last: the whole pool
    while low < high:
        middle = (low + high) // 2
        if pool.carries(middle) >= load_rps * (1 - 1e-9):
            high = middle
        else:
            low = middle + 1
    return low


def deploy_pools(instance: Instance, plan: Plan) -> tuple[DeployPool, ...]:
    """Every dedicated pool of `plan` with a replica, as a deployment record.

    Raises:
        DeployError: a shared group (co-location) or a pool the physics cannot serve:
            the deployment formats here run one model per engine.
    """
    if any(entry.members for entry in plan.replicas):
        raise DeployError(
            "the plan has shared groups (policy.colocation): deploy writes one engine per "
            "model; solve without colocation to deploy"
        )
    violations: list = []
    pools = [p for p in recompute_pools(instance, plan, violations, []) if p.count > 0]
    if violations:
        raise DeployError(
            "the plan does not fit the instance: " + "; ".join(v.message for v in violations)
        )
    loads = normal_loads(plan)
    running = scenario_hour_counts(plan)

    def carried(pool: RecomputedPool) -> float:
        """What the pool carries in the scenarios' hour: its count there (an hourly
        plan's pools need not all run in its busiest hour), else its whole count."""
        if running is None:
            return pool.carries(pool.count)
        return pool.carries(running.get((pool.workload, pool.region, pool.entries[0].key), 0))

    phase_capacity: dict[tuple[str, str, str], float] = defaultdict(float)
    for pool in pools:
        phase_capacity[(pool.workload, pool.region, _phase(pool))] += carried(pool)
    headroom = {(h.workload, h.region, h.configuration): h.headroom_rps for h in plan.headroom}
    started = failover_starts(plan)
    names = _unique_names(pools)
    records = []
    for pool in pools:
        key = (pool.workload, pool.region, _phase(pool))
        share = carried(pool) / phase_capacity[key] if phase_capacity[key] else 0
        normal = normal_size(pool, loads.get(key, 0.0) * share) if loads else pool.count
        entry = pool.entries[0]
        records.append(
            _record(
                instance,
                pool,
                names[id(pool)],
                normal,
                headroom.get((pool.workload, pool.region, entry.key), 0.0),
                _pair_of(pool, pools, names),
                started.get((pool.workload, pool.region, entry.key), 0),
            )
        )
    return tuple(records)


def scenario_hour_counts(plan: Plan) -> dict[tuple[str, str, str], int] | None:
    """(workload, region, configuration) -> replicas in the hour whose scenarios the plan
    states (`scenarios[].hour`: an hourly plan's busiest hour, a month's under
    `month_plan`); None for a plan of one period, whose pools all run at its peak."""
    hour = plan.scenarios[0].hour if plan.scenarios else None
    row = next((h for h in plan.hours if h.hour == hour), None) if hour is not None else None
    if row is None:
        return None
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for pool in row.pools:
        counts[(pool.workload, pool.region, pool.key)] += pool.count
    return dict(counts)


def failover_starts(plan: Plan) -> dict[tuple[str, str, str], int]:
    """(workload, region, configuration) -> the most replicas one region loss starts in
    the pool in any hour (`hours[].failover_starts`; none in a single-period plan, whose
    spare is warm)."""
    most: dict[tuple[str, str, str], int] = defaultdict(int)
    for hour in plan.hours:
        for start in hour.failover_starts:
            key = (start.pool.workload, start.pool.region, start.pool.key)
            most[key] = max(most[key], start.pool.count)
    return dict(most)


def _unique_names(pools: list[RecomputedPool]) -> dict[int, str]:
    """Each pool's name; one cut to the same text as an earlier one gets `-2`, `-3`, ..."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for pool in pools:
        name, index = _pool_name(pool), 1
        while name in taken:
            index += 1
            name = dns_name(_pool_name(pool)[: POOL_NAME_CHARS - len(str(index)) - 1], str(index))
        taken.add(name)
        names[id(pool)] = name
    return names


def _pool_name(pool: RecomputedPool) -> str:
    entry = pool.entries[0]
    layout = f"tp{entry.tp}pp{entry.pp}" + (f"dp{entry.dp}" if entry.dp > 1 else "")
    layout += f"ep{entry.ep}" if entry.ep > 1 else ""
    layout += f"r{entry.redundant_experts}" if entry.redundant_experts else ""
    spec = (entry.speculative,) if entry.speculative else ()
    return dns_name(
        pool.workload,
        pool.region,
        entry.gpu,
        str(entry.precision),
        layout,
        str(entry.role),
        *spec,
        limit=POOL_NAME_CHARS,
    )


def _kv_free_fraction(pool: RecomputedPool) -> float:
    """1 - reserve / (HBM - weights - activations) of the pool's most loaded GPU
    (`DeployPool.kv_free_fraction`)."""
    budget = replica_memory_budget(pool.config, pool.efficiency)
    free = budget.hbm_bytes_per_gpu - budget.weight_bytes_per_gpu - budget.activation_bytes_per_gpu
    return 1.0 - budget.reserve_bytes_per_gpu / free


def _pair_of(
    pool: RecomputedPool, pools: list[RecomputedPool], names: dict[int, str]
) -> str | None:
    """The other half of a disaggregated pool: the largest pool of the opposite role with
    the same workload, region and weight precision."""
    if pool.role is Role.UNIFIED:
        return None
    other = Role.DECODE if pool.role is Role.PREFILL else Role.PREFILL
    halves = [
        p
        for p in pools
        if p.role is other
        and (p.workload, p.region, p.precision) == (pool.workload, pool.region, pool.precision)
    ]
    return names[id(max(halves, key=lambda p: p.count))] if halves else None


def _record(
    instance: Instance,
    pool: RecomputedPool,
    name: str,
    normal: int,
    headroom_rps: float,
    pair: str | None,
    started: int,
) -> DeployPool:
    entry = pool.entries[0]
    workload = instance.workload(pool.workload)
    size = max(normal, 1)
    physics = pool.capacity(size)
    capacity = pool.requests_per_s(size)
    batch = resident_batch(capacity, physics.batch, physics.requests_per_s)
    thresholds = scaling_thresholds(
        capacity,
        headroom_rps,
        size,
        batch,
        max(physics.max_batch, 1),
        max(physics.prefill_s, 1e-9),
        workload.prompt_tokens.cv,
        None if workload.slo.ttft_p99_ms is None else workload.slo.ttft_p99_ms / 1000,
    )
    signals = {
        Role.PREFILL: ("queue_depth",),
        Role.DECODE: ("kv_cache_usage",),
        Role.UNIFIED: ("queue_depth", "kv_cache_usage"),
    }[pool.role]
    speculation = pool.config.speculation
    chunk = int(pool.efficiency.prefill_chunk_tokens)
    prefix = workload.prefix_cache_hit_rate > 0 or bool(workload.prefixes)
    return DeployPool(
        name=name,
        workload=pool.workload,
        model=workload.model,
        region=pool.region,
        gpu=entry.gpu,
        precision=str(entry.precision),
        kv_precision=str(pool.config.kv_precision),
        tp=entry.tp,
        pp=entry.pp,
        ep=entry.ep,
        redundant_experts=entry.redundant_experts,
        expert_slots=pool.config.llm.experts + entry.redundant_experts,
        dp=entry.dp,
        two_batch_overlap=pool.efficiency.overlaps(entry.tp, entry.dp, entry.ep),
        role=str(entry.role),
        replicas=pool.count,
        normal_replicas=normal,
        spare_replicas=pool.count - normal,
        gpus_per_replica=entry.replica_gpus,
        gpus_per_node=instance.gpu_specs[entry.gpu].gpus_per_node,
        max_batch=_batch_cap(pool.role, batch, physics.max_batch, chunk, workload),
        tokens_per_iteration=chunk,
        chunked_prefill_tokens=chunk,
        memory_reserve_fraction=pool.efficiency.memory_reserve_fraction,
        kv_free_fraction=_kv_free_fraction(pool),
        max_context_tokens=math.ceil(
            workload.prompt_tokens.p99_tokens + workload.output_tokens.p99_tokens
        ),
        prefix_caching=prefix,
        kv_tiers=tuple(entry.kv_tiers_used or ()),
        speculative=None
        if speculation is None
        else Speculative(
            speculation.name,
            speculation.tokens,
            None if speculation.draft is None else speculation.draft.name,
        ),
        pair=pair,
        capacity_rps_per_replica=capacity,
        autoscale=Autoscale(
            signals=signals,
            target_utilization=thresholds.target_utilization,
            kv_usage_scale_out=thresholds.kv_usage_scale_out,
            queue_depth_scale_out=thresholds.queue_trigger,
            queue_depth_slo_edge=None
            if math.isinf(thresholds.queue_depth_slo_edge)
            else thresholds.queue_depth_slo_edge,
            headroom_rps=headroom_rps,
        ),
        speculative_option=entry.speculative,
        started_replicas=started,
    )


def _batch_cap(role: Role, batch: float, max_batch: int, chunk: int, workload) -> int:
    """ceil(B) at capacity within the sequences that fit; a prefill replica at least the
    prompts of one chunk (see the module text)."""
    cap = math.ceil(batch - 1e-9)
    if role is Role.PREFILL:
        cap = max(cap, math.ceil(chunk / max(workload.prompt_tokens.mean_tokens, 1.0)))
    return max(1, min(cap, max(max_batch, 1)))
