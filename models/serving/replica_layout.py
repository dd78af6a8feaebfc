"""The physics of one replica's layout (`ReplicaConfig`): its memory budget, its step
model, what one decode iteration is (a plain step or a speculation cycle), and the KV
transfer of a prompt over its NICs between disaggregated replicas."""

from models.physics.efficiency import Efficiency
from models.physics.memory import MemoryBudget, kv_bytes_per_token, memory_budget
from models.physics.speculative import SpeculativeSteps, speculative_steps, with_draft_memory
from models.physics.step_time import StepModel, step_model
from models.serving.replica import ReplicaConfig, Role


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


def replica_memory_budget(config: ReplicaConfig, efficiency: Efficiency) -> MemoryBudget:
    """The memory budget of the replica's layout (`models.physics.memory.memory_budget`), with a
    speculative drafter's weights and KV cache (`models.physics.speculative.with_draft_memory`)."""
    budget = memory_budget(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
        config.ep,
        config.dp,
        config.redundant_experts,
    )
    if config.speculation is None:
        return budget
    return with_draft_memory(
        budget, config.speculation, config.tp, config.weight_precision, config.kv_precision
    )


def replica_step_model(config: ReplicaConfig, efficiency: Efficiency) -> StepModel:
    """The step model of the replica's layout."""
    return step_model(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
        ep=config.ep,
        dp=config.dp,
        redundant=config.redundant_experts,
    )


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
