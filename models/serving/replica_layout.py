"""The physics of one replica's layout (`ReplicaConfig`): its memory budget, its step
model, what one decode iteration is (a plain step or a speculation cycle), the KV
transfer of a prompt over its NICs between disaggregated replicas, and whether the layout
fits a traffic mix at all (`fit_replica`).

`fit_replica` is what a replica's capacity reads before its pool size: whether the layout
fits its GPUs, the model's context window and the p99 request's KV cache, and if so the
mix in tokens, the memory budget at the mix's footprint and the step model. None of it
depends on the pool size or the targets, so a caller that asks one configuration at many
pool sizes (the candidate table's ladder, its survivors and its failover curves:
solver.candidates.pools.PoolPhysics) works it out once and hands it to
`models.serving.capacity.replica_capacity` (`fitted`): the memory budget and the step
model were ~30% of chat-3region's candidate table, asked again at every pool size."""

import math
from dataclasses import dataclass
from typing import Any

from models.physics.efficiency import Efficiency
from models.physics.memory import (
    MemoryBudget,
    does_not_fit_message,
    kv_bytes_per_token,
    layout_problem,
    memory_budget,
)
from models.physics.speculative import SpeculativeSteps, speculative_steps, with_draft_memory
from models.physics.step_time import StepModel, step_model
from models.serving.capacity_reasons import memory_remedy
from models.serving.replica import (
    Limit,
    MixTokens,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
    TrafficMix,
)


def kv_transfer_s(config: ReplicaConfig, prompt_tokens: float, efficiency: Efficiency) -> float:
    """Seconds to ship a prompt's KV cache from a prefill replica to a decode replica over
    the replica's NICs: P x KV bytes per token / (gpus x NIC bytes/s x scaleout_fraction)."""
    return kv_transfer_bytes(config, prompt_tokens) / nic_bytes_per_s(config, efficiency)


def kv_transfer_bytes(config: ReplicaConfig, prompt_tokens: float) -> float:
    """KV bytes of a prompt of `prompt_tokens` tokens: P x KV bytes per token."""
    return prompt_tokens * kv_bytes_per_token(config.llm, config.kv_precision)


def nic_bytes_per_s(config: ReplicaConfig, efficiency: Efficiency) -> float:
    """What the replica's NICs carry: gpus x NIC bytes/s x scaleout_fraction."""
    return config.gpus * config.gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction


def layout_of(config: ReplicaConfig) -> dict[str, Any]:
    """The replica's layout as the physics' layout functions take it by keyword
    (`layout_problem`, `memory_budget` and `step_model` with its efficiency)."""
    return {
        "gpu": config.gpu,
        "llm": config.llm,
        "weight_precision": config.weight_precision,
        "kv_precision": config.kv_precision,
        "tp": config.tp,
        "pp": config.pp,
        "ep": config.ep,
        "dp": config.dp,
        "redundant": config.redundant_experts,
    }


def replica_memory_budget(config: ReplicaConfig, efficiency: Efficiency) -> MemoryBudget:
    """The memory budget of the replica's layout (`models.physics.memory.memory_budget`), with a
    speculative drafter's weights and KV cache (`models.physics.speculative.with_draft_memory`)."""
    budget = memory_budget(efficiency=efficiency, **layout_of(config))
    if config.speculation is None:
        return budget
    return with_draft_memory(
        budget, config.speculation, config.tp, config.weight_precision, config.kv_precision
    )


def replica_step_model(config: ReplicaConfig, efficiency: Efficiency) -> StepModel:
    """The step model of the replica's layout."""
    return step_model(efficiency=efficiency, **layout_of(config))


def decode_steps(
    config: ReplicaConfig, efficiency: Efficiency, steps: StepModel
) -> StepModel | SpeculativeSteps:
    """What one iteration of the replica's decode side is: `steps` (the replica's step
    model), or a speculation cycle over it when the configuration speculates."""
    if config.speculation is None or config.role is Role.PREFILL:
        return steps
    return speculative_steps(
        config.gpu,
        steps,
        config.speculation,
        config.weight_precision,
        config.kv_precision,
        efficiency,
        config.dp,
    )


@dataclass(frozen=True)
class ReplicaFit:
    """A configuration's layout against a traffic mix: `not_fitting` (the capacity of a
    replica that cannot serve it, with the reason) or the pieces its capacity reads."""

    not_fitting: ReplicaCapacity | None
    tokens: MixTokens | None = None
    budget: MemoryBudget | None = None
    """The layout's memory budget at the mix's footprint (`MemoryBudget.at_context`)."""
    steps: StepModel | None = None


def fit_replica(config: ReplicaConfig, mix: TrafficMix, efficiency: Efficiency) -> ReplicaFit:
    """Whether `config` fits its GPUs, the context window and the p99 request, and what
    its capacity reads at any pool size when it does."""
    problem = layout_problem(**layout_of(config))
    if problem is not None:
        return ReplicaFit(not_fitting_capacity(config, f"{config.label}: {problem}"))
    m = MixTokens.of(mix)
    llm = config.llm
    if m.prompt_p99 + m.output_p99 > llm.max_context_tokens:
        return ReplicaFit(
            not_fitting_capacity(
                config,
                f"{config.label}: a p99 request of {m.prompt_p99:,.0f} + {m.output_p99:,.0f} "
                f"tokens exceeds the {llm.max_context_tokens:,}-token context window of "
                f"{llm.name}",
            )
        )
    budget = replica_memory_budget(config, efficiency).at_context(m.footprint)
    needed = m.prompt_p99 if config.role is Role.PREFILL else m.prompt_p99 + m.output_p99
    if budget.sequence_kv_capacity_tokens < needed:  # one sequence lives in one DP group
        remedy = memory_remedy(config, efficiency, needed)
        message = does_not_fit_message(budget, needed, config.label, remedy)
        return ReplicaFit(not_fitting_capacity(config, message, budget))
    return ReplicaFit(None, m, budget, replica_step_model(config, efficiency))


def not_fitting_capacity(
    config: ReplicaConfig,
    reason: str,
    budget: MemoryBudget | None = None,
    limit: Limit = Limit.KV_MEMORY,
) -> ReplicaCapacity:
    """The capacity of a replica that cannot serve the mix: none, for `reason`."""
    return ReplicaCapacity(
        config=config,
        fits=False,
        meets_slo=False,
        requests_per_s=0.0,
        limit=limit,
        reason=reason,
        weight_bytes_per_gpu=budget.weight_bytes_per_gpu if budget else 0.0,
        kv_bytes_per_token=budget.kv_bytes_per_token if budget else 0.0,
        kv_capacity_tokens=budget.kv_capacity_tokens if budget else 0.0,
        max_batch=0,
        batch=0.0,
        prefill_s=math.inf,
        decode_step_s=math.inf,
        ttft_p99_s=math.inf,
        tpot_p99_s=math.inf,
        best_ttft_p99_s=math.inf,
        best_tpot_s=math.inf,
        output_tokens_per_s=0.0,
        kv_transfer_bytes_per_request=0.0,
    )
