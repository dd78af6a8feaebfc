"""The layouts the policy lets a workload consider, before any physics: every (GPU type
offered, weight precision, TP, PP, expert layout, role, speculation) the instance allows
(`configurations`), and why there is none where a filter leaves none
(`no_layout_problem`). solver.candidates.table evaluates each of them."""

from models.operations.site import offered, stage_problem
from models.physics.efficiency import profile_engine
from models.physics.llm import LlmSpec
from models.physics.memory import expert_layout_problem
from models.physics.overlap import engine_runs_layout
from models.physics.speculative import Speculation
from models.schema.instance import Instance, Workload
from models.schema.policy import BuyUnit
from models.serving.replica import ReplicaConfig, Role, replica_of_pool
from solver.errors import Problem


def offered_gpus(instance: Instance) -> list[str]:
    """GPU types some region offers (supply entry or existing fleet), in `gpus` order."""
    types = {gpu for _, gpu in offered(instance)}
    return [entry.name for entry in instance.gpus if entry.name in types]


def configurations(instance: Instance, workload: Workload) -> list[ReplicaConfig]:
    """Every layout the policy allows for a workload (before any physics)."""
    entry = instance.model_entry(workload.model)
    llm = instance.llm_specs[workload.model]
    policy = instance.policy
    roles = [Role.UNIFIED]
    if policy.disaggregation:
        roles += [Role.PREFILL, Role.DECODE]
    configs = []
    whole_servers = policy.buy_unit is BuyUnit.NODE
    for gpu_name in offered_gpus(instance):
        gpu = instance.gpu_specs[gpu_name]
        for precision in entry.weight_precisions:
            if not gpu.supports(precision):
                continue
            for tp in sorted(set(policy.tensor_parallel)):
                if llm.attention_heads % tp or tp > gpu.gpus_per_node:
                    continue
                for pp in sorted(set(policy.pipeline_parallel)):
                    if pp > llm.layers:
                        continue
                    for ep, dp, redundant in expert_layouts(instance, llm, tp):
                        if whole_servers and stage_problem(tp, dp, gpu.gpus_per_node):
                            continue
                        for role in roles:
                            configs += [
                                replica_of_pool(
                                    gpu, llm, precision, None, tp=tp, pp=pp, role=role,
                                    ep=ep, dp=dp, redundant_experts=redundant,
                                    speculation=speculation,
                                    pinned_kv_precision=entry.kv_precision,
                                )
                                for speculation in _speculations(instance, role)
                            ]  # fmt: skip
    return configs


def _speculations(instance: Instance, role: Role) -> list[Speculation | None]:
    """Plain decoding, then each `policy.speculative` option on a replica that decodes."""
    options = [] if role is Role.PREFILL else list(instance.speculations.values())
    return [None, *options]


def _words(values) -> str:
    """1 or 2 or 4."""
    return " or ".join(map(str, values))


def no_layout_problem(instance: Instance, workload: Workload, name: str) -> Problem:
    """Why `configurations` lists no layout at all, by the first of its filters that
    leaves none: pipeline stages beyond the model's layers, or TP degrees beyond a
    server, were read as a TP that does not divide the heads (PP 200 on a 32-layer model
    read 'no GPU supports fp8 with a TP of 1 or 2 that divides 32 attention heads')."""
    llm = instance.llm_specs[workload.model]
    policy = instance.policy
    stages = sorted(set(policy.pipeline_parallel))
    if all(pp > llm.layers for pp in stages):
        return Problem(
            name,
            f"{workload.name}: no configuration to consider: a PP of {_words(stages)} is "
            f"more pipeline stages than {llm.name}'s {llm.layers} layers",
            f"allow a policy.pipeline_parallel of at most {llm.layers}",
        )
    gpus = [instance.gpu_specs[gpu] for gpu in offered_gpus(instance)]
    dividing = [tp for tp in sorted(set(policy.tensor_parallel)) if llm.attention_heads % tp == 0]
    widest = max(gpu.gpus_per_node for gpu in gpus)
    if dividing and all(tp > widest for tp in dividing):
        return Problem(
            name,
            f"{workload.name}: no configuration to consider: a TP of {_words(dividing)} is "
            f"more GPUs than a server of the GPUs offered holds (at most {widest})",
            f"allow a policy.tensor_parallel of at most {widest}, or use policy.pipeline_parallel",
        )
    precisions = _words(instance.model_entry(workload.model).weight_precisions)
    degrees = _words(policy.tensor_parallel)
    return Problem(
        name,
        f"{workload.name}: no configuration to consider: no GPU offered ("
        f"{', '.join(gpu.name for gpu in gpus)}) supports {precisions} with a TP of "
        f"{degrees} that divides {llm.name}'s {llm.attention_heads} attention heads",
        "offer a GPU that supports the model's precisions, or allow other TP degrees",
    )


def instance_engine(instance: Instance) -> str | None:
    """The serving engine of the instance's engine profile (`vllm` for `vllm-0.11`,
    `models.physics.efficiency.engine_family`); None for an unknown profile (the
    cross-check names it) or one that belongs to no engine of the catalog."""
    named = profile_engine(instance.engine)
    return named[1] if named is not None else None


def expert_layouts(instance: Instance, llm: LlmSpec, tp: int) -> list[tuple[int, int, int]]:
    """The (ep, dp, redundant) layouts the policy allows at TP `tp`: ep in
    `policy.expert_parallel`, dp in `policy.attention_data_parallel`, redundant in
    `policy.redundant_experts`, kept when the layout rule holds
    (`models.physics.memory.expert_layout_problem`: an MoE model, ep dividing tp x dp and the
    routed + redundant experts, redundant copies only with ep > 1) and the engine profile's
    engine runs the layout as laid out (`models.physics.overlap.engine_layout_problem`:
    vLLM at EP 1 or TP x DP, TensorRT-LLM's attention DP at TP 1; a layout it would start
    as another is timed as neither). (1, 1, 0), plain TP, is always kept, so a dense model and the
    defaults enumerate exactly the TP x PP layouts."""
    policy = instance.policy
    engine = instance_engine(instance)
    layouts = [(1, 1, 0)]
    for dp in sorted(set(policy.attention_data_parallel)):
        for ep in sorted(set(policy.expert_parallel)):
            if not engine_runs_layout(engine, tp, dp, ep):
                continue
            for redundant in sorted(set(policy.redundant_experts)):
                layout = (ep, dp, redundant)
                if layout != (1, 1, 0) and expert_layout_problem(llm, tp, *layout) is None:
                    layouts.append(layout)
    return layouts
