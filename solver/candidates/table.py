"""The candidate table: every replica configuration worth considering, with its capacity.

For each workload w the candidates are the configurations

    (GPU g, weight precision p, TP t, PP s, EP e, DP d, role)

with g offered in some region (supply or existing fleet), p in the model entry's
`weight_precisions` and supported by g's tensor cores, t in `policy.tensor_parallel`
dividing the attention heads and within one scale-up domain (t <= gpus_per_node; with
`policy.buy_unit: node`, each stage's t x d GPUs divide the server or fill whole servers,
so a replica straddles servers only by its pipeline stages or by attention DP groups
across whole servers: `models.operations.site.stage_problem`), s in
`policy.pipeline_parallel` (at most the layer count), e in `policy.expert_parallel` and d
in `policy.attention_data_parallel` where the expert layout rule holds (an MoE model, e
dividing t x d and the experts; e = d = 1 always), role unified, plus prefill and
decode when `policy.disaggregation`. The KV cache is kept at the model entry's
`kv_precision`, else at p but never below fp8. Each unified and decode configuration
comes plain and with each option of `policy.speculative` (`models.physics.speculative`), so the
program turns speculation on per pool; dominance below drops the variant that carries
less (speculation usually wins at tight TPOT targets and loses at loose ones).

The performance model (`models.serving.capacity.replica_capacity`) gives each one its capacity
at the SLO, q in requests/s of its own phase, and the factor that limits it. The KV
transfer of disaggregated serving is a per-replica limit there (a prefill replica's NICs
ship its own prompts' KV, a decode replica's NICs receive it; limit `interconnect`), not
an aggregate row over pools in the program: one pool's idle NIC cannot carry another
pool's KV, so only the per-replica cap is sound.

Kept: configurations that fit and meet the SLO (q > 0). Pruned: dominated ones.
Within a group of the same GPU type and role (and, for a disaggregated role, the same
weight precision, since prefill and decode halves pair by it), A dominates B when

    gpus(A) divides gpus(B)   and   (gpus(B) / gpus(A)) x q(A) >= q(B),

that is, B's GPUs regrouped as replicas of A carry at least as much. Any plan using B
becomes one at the same cost using A (n replicas of B become m n of A, m = gpus(B) /
gpus(A)), and it survives the same failures: after losing one replica, (m n - 1) q(A)
>= (n - 1) q(B) remains; after losing a zone, floor(m n (Z-1) / Z) >= m floor(n (Z-1)
/ Z) replicas of A remain. So pruning never raises the optimum, and the program stays
small: for each group it keeps the front of capacity per GPU against replica size.

Prefill candidates with no decode candidate of the same precision (and vice versa) are
dropped: half a pair serves nothing.

Pools. The replicas of one candidate serving one workload in one region sit behind one
router, so their prompts share one queue (M/G/c) and each replica carries more, the more
replicas the pool holds (`models.serving.capacity`, "Pools"). Each candidate carries its pool
curve (solver.candidates.pools.PoolCurve: q(1), the ceiling q(inf) of an unlimited pool, and q at
every size the program can use, tabulated here once) and its pooling ladder: every pool
size 2, 4, 8, ... up to the largest pool worth having
(`solver.candidates.pools.largest_pool`), each with its q (`PoolStep`; empty when
pooling cannot lift the replica: KV memory, the token budget or the batch cap limits
it, `models.serving.capacity.pooling_can_lift`; or when an unlimited pool lifts q(1) by
less than `POOL_STEP_GAIN`). The sizes do not depend on the gains between them, so a
looser target (q never lower) credits a pool at the same step, never less. The program
(solver.program.families.pooling) credits a pool with a step only when it holds at least that
many replicas. Powers of two keep the ladder short (one step per doubling) and the same
in every region.

Failover round trip. A region that may receive users rerouted from R ms away serves its
whole queue at the TTFT target less R (`models.operations.scenarios`), so each kept candidate also
carries its curve at every such target (`failover`, at the sizes of its own curve) for
the program's failover capacity rows.

With pooling, dominance compares the worst of A with the best of B: A dominates B when
gpus(A) divides gpus(B) and (gpus(B) / gpus(A)) x q_A(1) >= q_B(inf). Then n replicas of
B, credited at most n q_B(inf) in a pool of any size and in any scenario, become m n
replicas of A credited at least m n q_A(1) >= n q_B(inf), and the failure arguments above
hold with q_A(1) and q_B(inf) in place of q(A) and q(B). When the wait does not bind,
q(inf) = q(1) and this is the rule above; when it binds, pruning is weaker, never wrong.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any

from models.operations.scenarios import rerouted_rtts
from models.physics.efficiency import check_engine, efficiency_for
from models.physics.precision import Precision
from models.schema.instance import Instance, Workload
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.pooling import planning_capacity
from models.serving.replica import (
    Limit,
    MixTokens,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
)
from solver.candidates.layouts import configurations, no_layout_problem, offered_gpus
from solver.candidates.pools import (
    PoolCurve,
    PoolPhysics,
    PoolStep,
    capacity_derate_of,
    failover_curve,
    largest_pool,
    lone_curve,
    tabulate_curve,
)
from solver.errors import Problem
from solver.plan.records import configuration_key
from solver.settings import SolveSettings


@dataclass(frozen=True)
class Candidate:
    """One replica configuration for one workload, with its capacity at the SLO: plain
    frozen data, evaluated once at enumeration.

    `capacity` is that of a lone replica (pool of 1); `curve` q(n) tabulated at the
    sizes the program can use (solver.candidates.pools); `ladder` the larger pool sizes worth
    crediting (see the module docstring).
    """

    workload: str
    capacity: ReplicaCapacity
    curve: PoolCurve
    ladder: tuple[PoolStep, ...] = ()
    """Pool sizes > 1, increasing (the powers of two up to the largest pool worth having),
    each with its capacity per replica."""
    failover: tuple[tuple[float, PoolCurve], ...] = ()
    """(round trip ms, the curve at the TTFT target less it) for every round trip from
    which the workload's users may be rerouted to some region in some scenario
    (`models.operations.scenarios.rerouted_rtts`, `solver.candidates.pools.failover_curve`), at the
    sizes of `curve`; empty for a table built by hand (its pools are then not charged)."""

    def failover_curve(self, rtt_ms: float) -> PoolCurve | None:
        """The curve at the TTFT target less `rtt_ms`, or None when not tabulated."""
        return next((curve for rtt, curve in self.failover if rtt == rtt_ms), None)

    @property
    def requests_per_s(self) -> float:
        """Capacity of one lone replica at the SLO (requests/s of its own phase): what
        a replica carries in a pool of any size, at least."""
        return self.capacity.requests_per_s

    @property
    def top_requests_per_s(self) -> float:
        """The largest capacity per replica the program may credit (top of the ladder)."""
        return self.ladder[-1].requests_per_s if self.ladder else self.requests_per_s

    @property
    def ceiling(self) -> float:
        """Capacity per replica of an unlimited pool (at least the ladder's top)."""
        return max(self.curve.ceiling_requests_per_s, self.top_requests_per_s)

    def requests_per_s_at(self, pool_replicas: int) -> float:
        """Capacity per replica at the SLO in a pool of `pool_replicas`, from the
        tabulated curve (0 for an empty pool)."""
        return self.curve.requests_per_s(pool_replicas)

    @property
    def limit(self) -> Limit:
        """What limits one replica's capacity."""
        return self.capacity.limit

    @property
    def config(self) -> ReplicaConfig:
        """The replica layout."""
        return self.capacity.config

    @property
    def gpu(self) -> str:
        """GPU type name."""
        return self.config.gpu.name

    @property
    def precision(self) -> Precision:
        """Weight precision."""
        return self.config.weight_precision

    @property
    def kv_precision(self) -> Precision:
        """KV-cache precision."""
        return self.config.kv_precision

    @property
    def role(self) -> Role:
        """unified, prefill or decode."""
        return self.config.role

    @property
    def gpus(self) -> int:
        """GPUs per replica (tp x pp)."""
        return self.config.gpus

    @cached_property
    def key(self) -> str:
        """Short, name-safe identifier, e.g. `h100-sxm.fp8.tp4pp1.unified` (written once:
        every row of the program names it)."""
        c = self.config
        speculative = c.speculation.name if c.speculation is not None else None
        return configuration_key(
            c.gpu.name,
            c.weight_precision,
            c.tp,
            c.pp,
            c.role,
            c.ep,
            c.dp,
            speculative,
            c.redundant_experts,
        )

    @property
    def label(self) -> str:
        """Human label, e.g. `h100-sxm fp8 tp4xpp1 unified`."""
        return self.config.label

    @property
    def layout_fields(self) -> dict[str, Any]:
        """The fields of a plan's replica pool (`solver.plan.records.ReplicaPool`) that name this
        layout: GPU, precisions, TP x PP (x DP, EP), speculative option and role."""
        c = self.config
        return {
            "gpu": self.gpu,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "tp": c.tp,
            "pp": c.pp,
            "ep": c.ep,
            "redundant_experts": c.redundant_experts,
            "dp": c.dp,
            "speculative": c.speculation.name if c.speculation is not None else None,
            "role": self.role,
        }


@dataclass(frozen=True)
class CandidateTable:
    """The kept candidates of every workload, and what was left out."""

    by_workload: dict[str, tuple[Candidate, ...]]
    evaluated: dict[str, int] = field(default_factory=dict)
    """Configurations the performance model was asked about, per workload."""
    usable: dict[str, int] = field(default_factory=dict)
    """Of those, the ones that fit and meet the SLO."""
    problems: tuple[Problem, ...] = ()
    """One per workload that no configuration can serve, with the best value reached."""
    set_aside: dict[str, "SetAside"] = field(default_factory=dict, compare=False, repr=False)
    """Per workload, its candidates before pruning (`without`); empty for a table built
    by hand."""

    def of(self, workload: str) -> tuple[Candidate, ...]:
        """The kept candidates of a workload (empty when none)."""
        return self.by_workload.get(workload, ())

    def find(self, workload: str, key: str) -> Candidate:
        """The candidate of `workload` with this key (`h100-sxm.fp8.tp4pp1.unified`)."""
        return next(c for c in self.of(workload) if c.key == key)

    def without(self, workload: str, key: str) -> "CandidateTable | None":
        """The table a program without candidate `key` of `workload` (somewhere) needs:
        the kept candidates plus those pruning dropped only because `key` dominated them,
        that is the front of the workload's candidates with `key` left out (dominance is
        transitive, so the front of the rest is all the rest needs). `key` itself stays:
        explain removes it from one region by bounds. None when `key` dominated nothing
        (the table as it is serves)."""
        aside = self.set_aside.get(workload)
        if aside is None:
            return None
        kept = {c.key for c in self.of(workload)}
        rest = [c for c in aside.paired if c.key != key]
        back = [c for c in prune_dominated(rest, aside.by_precision) if c.key not in kept]
        if not back:
            return None
        order = {c.key: i for i, c in enumerate(aside.paired)}
        restored = [*self.of(workload), *map(aside.finish, back)]
        restored.sort(key=lambda c: order[c.key])
        return replace(self, by_workload={**self.by_workload, workload: tuple(restored)})


@dataclass(frozen=True)
class SetAside:
    """One workload's usable candidates before pruning, so that a program without one
    of them can have back what it dominated (`CandidateTable.without`): explain's
    "without this pool" must be the optimum of the instance without it, and a candidate
    pruned for being dominated by the pool removed is no longer dominated there."""

    paired: tuple[Candidate, ...]
    """Every usable candidate with its other half (`drop_unpaired`), lone curves."""
    by_precision: bool
    """`prune_dominated`'s grouping (policy.one_precision_per_workload)."""
    finish: Callable[[Candidate], Candidate]
    """Tabulates one of them as a kept candidate is (curve, ladder, failover curves)."""


def build_candidates(instance: Instance, settings: SolveSettings | None = None) -> CandidateTable:
    """Evaluate every configuration of every workload and keep the useful ones.

    A workload that no configuration can serve gets no candidates and a problem in
    `problems`, naming the best value any configuration reaches against its target
    (the pipeline reports it with the pre-solve checks, before solving). The physics of
    each kept candidate is tabulated here (solver.candidates.pools), never asked again.

    Args:
        instance: The validated instance.
        settings: The run's settings; their deadline is checked after each configuration
            (`TimeLimitReached` in stage "candidates"). None: no deadline.
    """
    cache: dict[tuple, ReplicaCapacity] = {}
    physics: dict[tuple, PoolPhysics] = {}
    curves: dict[tuple, PoolCurve] = {}  # q(1) and the ceiling, per configuration and mix
    by_workload: dict[str, tuple[Candidate, ...]] = {}
    evaluated: dict[str, int] = {}
    usable_counts: dict[str, int] = {}
    problems: list[Problem] = []
    set_aside: dict[str, SetAside] = {}
    zone_counts = tuple(sorted({r.zones for r in instance.regions if r.zones > 1}))
    check = None if settings is None else (lambda: settings.check("candidates", within=True))
    rerouted = rerouted_rtts(instance, check)
    for workload in instance.workloads:
        mix = traffic_mix(workload, instance.policy.prefix_affinity)
        targets = latency_targets(workload.slo)
        results = []
        usable = []
        for config in configurations(instance, workload):
            if settings is not None:
                settings.check("candidates", within=True)
            key = (
                config.gpu.name,
                config.llm.name,
                config.weight_precision,
                config.kv_precision,
                config.tp,
                config.pp,
                config.role,
                config.ep,
                config.redundant_experts,
                config.dp,
                config.speculation.name if config.speculation else None,
                mix,
                targets,
            )
            if key not in cache:
                efficiency = efficiency_for(
                    config.gpu, config.weight_precision, instance.efficiency, instance.engine
                )
                physics[key] = PoolPhysics(
                    config,
                    mix,
                    targets,
                    efficiency,
                    instance.policy.credit_tpot_pooling,
                    capacity_derate_of(instance, config),
                )
                cache[key] = physics[key].at(1)
                if planning_capacity(cache[key]) > 0:
                    curves[key] = lone_curve(physics[key], cache[key])
            results.append(cache[key])
            if key in curves:
                usable.append((key, Candidate(workload.name, cache[key], curves[key])))
        evaluated[workload.name] = len(results)
        usable_counts[workload.name] = len(usable)
        paired = drop_unpaired([c for _, c in usable])
        one_precision = instance.policy.one_precision_per_workload
        finish = partial(
            _finished,
            instance,
            {c.key: physics[key] for key, c in usable},
            zone_counts,
            rerouted[workload.name],
        )
        kept = [finish(c) for c in prune_dominated(paired, one_precision)]
        if not kept:
            problems.append(no_candidate_problem(instance, workload, results))
        by_workload[workload.name] = tuple(kept)
        if len(kept) < len(paired):
            set_aside[workload.name] = SetAside(tuple(paired), one_precision, finish)
    return CandidateTable(by_workload, evaluated, usable_counts, tuple(problems), set_aside)


def _finished(
    instance: Instance,
    physics: dict[str, PoolPhysics],
    zone_counts: tuple[int, ...],
    rerouted: tuple[float, ...],
    candidate: Candidate,
) -> Candidate:
    """A usable candidate with its pool curve, ladder and failover curves tabulated
    (`physics`: by candidate key; `rerouted`: the workload's rerouted round trips)."""
    c = candidate
    own = physics[c.key]
    largest = largest_pool(instance, c.workload, c.gpu, c.gpus, c.requests_per_s)
    curve, ladder = tabulate_curve(own, c.curve, largest, zone_counts)
    failover = tuple((rtt_ms, failover_curve(own, curve, rtt_ms)) for rtt_ms in rerouted)
    return replace(c, curve=curve, ladder=ladder, failover=failover)


def drop_unpaired(candidates: list[Candidate]) -> list[Candidate]:
    """Drop prefill candidates with no decode candidate of the same weight precision,
    and the reverse."""
    sides: dict[Precision, set[Role]] = defaultdict(set)
    for candidate in candidates:
        sides[candidate.precision].add(candidate.role)
    return [
        c
        for c in candidates
        if c.role is Role.UNIFIED or {Role.PREFILL, Role.DECODE} <= sides[c.precision]
    ]


def prune_dominated(candidates: list[Candidate], by_precision: bool = False) -> list[Candidate]:
    """Keep, in each (GPU, role[, precision]) group, the candidates no other dominates
    (`by_precision`: every role grouped by precision too, for
    `policy.one_precision_per_workload`, where an fp4 replica cannot stand in for an fp8
    one).

    A dominates B when gpus(A) divides gpus(B) and gpus(B) / gpus(A) x q_A(1) >= q_B(inf)
    (the worst A can be credited with against the best B could be; see the module
    docstring); among equals, the smaller replica (then fewer TP, then the first
    precision) stays.
    """
    groups: dict[tuple, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        apart = by_precision or candidate.role is not Role.UNIFIED
        precision = candidate.precision if apart else None
        groups[(candidate.gpu, candidate.role, precision)].append(candidate)
    kept: list[Candidate] = []
    for group in groups.values():
        ordered = sorted(group, key=lambda c: (c.gpus, -c.requests_per_s, c.config.tp))
        front: list[Candidate] = []
        for candidate in ordered:
            if not any(_dominates(a, candidate) for a in front):
                front.append(candidate)
        kept.extend(front)
    order = {id(c): i for i, c in enumerate(candidates)}
    return sorted(kept, key=lambda c: order[id(c)])


def _dominates(a: Candidate, b: Candidate) -> bool:
    if b.gpus % a.gpus:
        return False
    return (b.gpus // a.gpus) * a.requests_per_s >= b.ceiling * (1 - 1e-9)


def _window_problem(workload: Workload, window: int, tokens: MixTokens, name: str) -> Problem:
    """A p99 request longer than the model's context window: no layout, precision or GPU
    can serve it (`models.serving.replica_layout.fit_replica` refuses every one), so the
    remedy is the request's lengths or the model, not memory."""
    return Problem(
        name,
        f"{workload.name}: a p99 request of {tokens.prompt_p99:,.0f} prompt + "
        f"{tokens.output_p99:,.0f} output tokens exceeds the {window:,}-token context window "
        f"of {workload.model}, on every configuration",
        f"shorten workloads[{workload.name}].prompt_tokens.p99 or output_tokens.p99 so that "
        f"their sum is at most {window:,}, or serve a model with a longer context window",
    )


def no_candidate_problem(
    instance: Instance, workload: Workload, results: list[ReplicaCapacity]
) -> Problem:
    """Why no configuration can serve a workload, with the best value any reaches."""
    llm = instance.llm_specs[workload.model]
    context = (
        f"{_tokens(workload.prompt_tokens.mean_tokens)} prompts, "
        f"{_tokens(workload.output_tokens.mean_tokens)} outputs on {llm.name} "
        f"({llm.published_params_b:g}B parameters)"
    )
    name = f"candidates[{workload.name}]"
    if not results and not offered_gpus(instance):
        return Problem(
            name,
            f"{workload.name}: no configuration to consider: no region offers a GPU "
            "(every supply is empty and no GPU is owned)",
            "give a region a supply entry (regions[].supply.GPU.max_gpus) or existing GPUs",
        )
    if not results:
        return no_layout_problem(instance, workload, name)
    fitting = [r for r in results if r.fits]
    no_fp4 = sorted(
        {r.config.gpu.name for r in results if not r.config.gpu.supports(Precision.FP4)}
    )
    if not fitting and all(
        r.config.kv_precision is Precision.FP4 and r.config.gpu.name in no_fp4 for r in results
    ):  # not memory: the KV precision asked for is one no GPU offered can hold
        return Problem(
            name,
            f"{workload.name}: every configuration keeps its KV cache in fp4, which "
            f"{', '.join(no_fp4)} cannot hold ({context})",
            f"set {workload.model}'s kv_precision to fp8 or bf16, or offer a GPU with fp4 support",
        )
    tokens = MixTokens.of(traffic_mix(workload, instance.policy.prefix_affinity))
    if not fitting and tokens.prompt_p99 + tokens.output_p99 > llm.max_context_tokens:
        return _window_problem(workload, llm.max_context_tokens, tokens, name)
    if not fitting:
        largest = max(results, key=lambda r: r.config.gpus * r.config.gpu.hbm_bytes)
        return Problem(
            name,
            f"{workload.name}: no configuration fits in memory ({context}); the largest, "
            f"{largest.config.label}, does not: {largest.reason}",
            "allow larger TP or PP, a lower weight precision, or GPUs with more memory",
        )
    slo = workload.slo
    parts = []
    best_ttft = min(fitting, key=lambda r: r.best_ttft_p99_s)
    best_tpot = min(fitting, key=lambda r: r.best_tpot_s)
    if slo.ttft_p99_ms is not None and best_ttft.best_ttft_p99_s * 1e3 > slo.ttft_p99_ms:
        parts.append(
            f"p99 TTFT >= {_seconds(best_ttft.best_ttft_p99_s)} on every configuration that "
            f"fits (best: {best_ttft.config.label}); target {_seconds(slo.ttft_p99_ms / 1e3)}"
            + _overhead_part(instance, best_ttft.config)
        )
    if slo.tpot_p99_ms is not None and best_tpot.best_tpot_s * 1e3 > slo.tpot_p99_ms:
        parts.append(
            f"time per output token >= {best_tpot.best_tpot_s * 1e3:.1f} ms even at batch 1 "
            f"(best: {best_tpot.config.label}); target {slo.tpot_p99_ms:g} ms"
        )
    if not parts:
        closest = min(fitting, key=lambda r: r.best_ttft_p99_s)
        parts.append(
            f"no configuration meets both latency targets at any load "
            f"(TTFT target {slo.ttft_p99_ms} ms, TPOT target {slo.tpot_p99_ms} ms); "
            f"e.g. {closest.config.label}: {closest.reason}"
        )
    return Problem(
        name,
        f"{workload.name}: " + "; ".join(parts) + f"; {context}",
        "loosen the SLO, raise the prefix-cache hit rate, allow larger TP, or offer a faster GPU",
    )


def _overhead_part(instance: Instance, config: ReplicaConfig) -> str:
    """' (of which 88 ms is the sglang-0.5 profile's request overhead, ...)' where the
    engine profile puts a fixed cost in front of every request ('' where it does not)."""
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    overhead_s = efficiency.request_overhead_s
    if overhead_s <= 0:
        return ""
    return (
        f" (of which {_seconds(overhead_s)} is the {check_engine(instance.engine)} engine "
        "profile's request overhead, request_overhead_s: HTTP, tokenisation and scheduling "
        "before the engine, in every TTFT whatever the layout)"
    )


def _tokens(count: float) -> str:
    """'32,768-token': a token count as the other messages write it, in full with
    thousands separators (never a binary K, which read 100,000 as '98K')."""
    return f"{count:,.0f}-token"


def _seconds(value_s: float) -> str:
    """A latency as the messages say it: '0.85 s', '43 ms', and under a millisecond its
    own digits ('0.4 ms', '1e-09 ms'; a TTFT target of 0.4 ms read 'target 0 ms')."""
    if value_s >= 0.1:
        return f"{value_s:.2f} s"
    return f"{value_s * 1e3:.0f} ms" if value_s >= 1e-3 else f"{value_s * 1e3:.2g} ms"
