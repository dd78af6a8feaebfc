"""Speculative decoding: a cheap drafter proposes k tokens, the target checks them in one pass.

One speculation cycle of a sequence (a draft model, EAGLE-style heads or multi-token
prediction modules alike):

    draft:  k draft steps, each proposing one token          draft_s(B) per cycle
    verify: one target pass over the k + 1 positions          verify_s(B, k) per cycle
    tokens: the longest accepted prefix, plus one the target adds itself

With a mean per-position acceptance rate a (each proposed token accepted with chance a,
independently, given that the ones before it were), the tokens a cycle emits are
X = 1 + min(G, k), G geometric, P(X >= i + 1) = a^i for i = 0..k, so

    E = E[X] = sum_{i=0..k} a^i = (1 - a^(k+1)) / (1 - a)        (E = k + 1 at a = 1)
    E[X^2] = sum_{i=0..k} (2 i + 1) a^i

and the time per output token and the speed-up over plain decoding at a batch B are

    TPOT_spec(B) = (draft_s(B) + verify_s(B, k)) / E
    speed-up(B)  = decode_step_s(B) / TPOT_spec(B)

Verify pass. Every sequence of the batch sends its k + 1 positions through the target
in one pass (`verify_parts`): the linear layers see B (k + 1) tokens (LM head included:
every position needs its logits), each position attends to the context c plus the
draft positions before it (B (k + 1) (c + k/2) query-key pairs of attention FLOPs), and
the KV cache of a sequence is read once for its k + 1 queries (attention kernels tile
the queries of a sequence together), c + k entries. At a small batch the pass is
weight-bound, so k + 1 tokens cost about as much as one: the speed-up is about E /
(1 + draft share). As B grows the linear layers turn compute-bound and the pass costs
(k + 1) x what a plain step costs, while E stays the same: the speed-up shrinks with
the batch and falls below 1 past a crossover batch (`crossover_batch`). A longer
context puts more of every step into KV reads, which the verify pass does not multiply,
so it moves the crossover to larger batches: context length moves the whole table.

Draft cost. A named draft model runs its own step model on the replica's GPUs (TP
as the target's where its heads allow, no PP): k decode steps at batch B and context c
(`StepModel.decode_step_s` less the engine overhead: the engine schedules once per cycle
and runs the draft steps back to back, as vLLM and TensorRT-LLM do with CUDA graphs).
EAGLE heads and MTP modules, or any drafter given by its cost, take `draft_cost_ratio`
R: one draft step costs R x the target's decode pass at the same batch and context.
Prompt tokens that ride along in a cycle (chunked prefill) go through the drafter too.

Memory. A draft model's weights sit on every GPU of the replica at its TP, and its KV
cache grows with the target's: both come off the KV budget (`with_draft_memory`). A
drafter given by its cost ratio takes R x the target's weights and KV bytes (a one-layer
EAGLE head of an 80-layer model: ~1/80 of each).

Assumptions: acceptance is one mean rate, position-independent, and the same at every
batch and context (measured rates fall with the position; a per-position list can be
folded into an equivalent mean); tree drafts are not modelled; the draft is exact in
its token count, k draft steps per cycle.
"""

import math
from dataclasses import dataclass, replace

from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import (
    MemoryBudget,
    check_layout,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    weight_bytes_per_gpu,
)
from models.physics.pass_parts import PassParts
from models.physics.precision import Precision
from models.physics.step_time import StepModel, step_model


def expected_tokens(acceptance_rate: float, draft_tokens: int) -> float:
    """E = (1 - a^(k+1)) / (1 - a): tokens one cycle emits (k + 1 at a = 1, 1 at k = 0).

    Args:
        acceptance_rate: a, the mean chance a proposed token is accepted, in [0, 1].
        draft_tokens: k, tokens proposed per cycle (>= 0).
    """
    a, k = acceptance_rate, draft_tokens
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def tokens_variance(acceptance_rate: float, draft_tokens: int) -> float:
    """Var[X] of the tokens one cycle emits: sum_{i=0..k} (2 i + 1) a^i - E^2."""
    a, k = acceptance_rate, draft_tokens
    second = sum((2 * i + 1) * a**i for i in range(k + 1))
    return max(second - expected_tokens(a, k) ** 2, 0.0)


@dataclass(frozen=True)
class Speculation:
    """One speculative-decoding option: the drafter, k and a.

    Exactly one of `draft` (a draft model run by the step model) and `draft_cost_ratio`
    (EAGLE heads, MTP, or any drafter given by its cost) is set.
    """

    name: str
    tokens: int
    """k: draft tokens proposed per cycle."""
    acceptance_rate: float
    """a: the mean chance one proposed token is accepted."""
    draft: LlmSpec | None = None
    draft_cost_ratio: float | None = None
    """One draft step over one target decode pass at the same batch and context."""

    def __post_init__(self) -> None:
        if (self.draft is None) == (self.draft_cost_ratio is None):
            raise ValueError(f"speculation {self.name!r}: give a draft model or a cost ratio")
        if self.tokens < 1 or not 0.0 <= self.acceptance_rate <= 1.0:
            raise ValueError(
                f"speculation {self.name!r}: tokens must be >= 1 and acceptance in [0, 1]"
            )

    @property
    def expected_tokens(self) -> float:
        """E: tokens one cycle emits."""
        return expected_tokens(self.acceptance_rate, self.tokens)

    @property
    def drafter(self) -> str:
        """`llama-3.1-8b` or `cost ratio 0.05`."""
        if self.draft is not None:
            return self.draft.name
        return f"cost ratio {self.draft_cost_ratio:g}"

    @property
    def label(self) -> str:
        """`spec eagle k3 a0.7`: the option in a replica label."""
        return f"spec {self.name} k{self.tokens} a{self.acceptance_rate:g}"


def draft_tp(draft: LlmSpec, tp: int) -> int:
    """The draft's TP: the target's, halved until it divides the draft's attention and KV
    heads (a small draft may have fewer heads than the target has GPUs)."""
    degree = tp
    while degree > 1 and layout_problem_of(draft, degree):
        degree //= 2
    return degree


def layout_problem_of(llm: LlmSpec, tp: int) -> bool:
    """Whether TP `tp` cannot split `llm` (`models.physics.memory.check_layout`)."""
    try:
        check_layout(llm, tp)
    except ValueError:
        return True
    return False


def with_draft_memory(
    budget: MemoryBudget,
    speculation: Speculation,
    tp: int,
    weight_precision: Precision,
    kv_precision: Precision,
) -> MemoryBudget:
    """The budget with the drafter's weights and KV cache on top of the target's.

    Draft model: its weights at `weight_precision` split over `draft_tp` GPUs, its KV per
    token at `kv_precision` (per GPU at its TP; the replica's bytes per token add the
    draft's whole KV). Cost ratio R: R x the target's weights and KV bytes.
    """
    draft = speculation.draft
    if draft is None:
        ratio = speculation.draft_cost_ratio or 0.0
        return replace(
            budget,
            weight_bytes_per_gpu=budget.weight_bytes_per_gpu * (1 + ratio),
            kv_bytes_per_token_per_gpu=budget.kv_bytes_per_token_per_gpu * (1 + ratio),
            kv_bytes_per_token=budget.kv_bytes_per_token * (1 + ratio),
        )
    degree = draft_tp(draft, tp)
    return replace(
        budget,
        weight_bytes_per_gpu=budget.weight_bytes_per_gpu
        + weight_bytes_per_gpu(draft, weight_precision, degree),
        kv_bytes_per_token_per_gpu=budget.kv_bytes_per_token_per_gpu
        + kv_bytes_per_token_per_gpu(draft, kv_precision, degree, 1),
        kv_bytes_per_token=budget.kv_bytes_per_token + kv_bytes_per_token(draft, kv_precision),
    )


def verify_parts(
    steps: StepModel,
    sequences: float,
    context_tokens: float,
    draft_tokens: int,
    prefill_tokens: float = 0.0,
    prefill_context_tokens: float = 0.0,
) -> PassParts:
    """One stage pass verifying k draft tokens of `sequences` sequences (module docstring):
    B (k + 1) tokens through the linear layers, B (k + 1) (c + k/2) attention pairs, the
    KV read once per sequence over c + k entries; prompt tokens ride along as in a plain
    iteration. k = 0 is the plain decode pass."""
    positions = draft_tokens + 1
    pairs_per_position = context_tokens + draft_tokens / 2
    parts = steps.pass_parts(
        sequences * positions,
        sequences * positions * pairs_per_position,
        prefill_tokens,
        prefill_tokens * prefill_context_tokens,
    )
    if draft_tokens == 0 or pairs_per_position <= 0:
        return parts
    read_share = (context_tokens + draft_tokens) / (positions * pairs_per_position)
    return replace(parts, kv_read_s=parts.kv_read_s * read_share)


def verify_iteration_s(
    steps: StepModel,
    batch: float,
    context_tokens: float,
    draft_tokens: int,
    prefill_tokens: float = 0.0,
    prefill_context_tokens: float = 0.0,
) -> float:
    """The target's verify iteration at batch B, as `StepModel.iteration_s` times a plain
    one (`StepModel.cycle_s`): pp = 1, pass + overhead; pp > 1, m = min(pp, B)
    micro-batches, pp x (pass + hop of one micro-batch's B (k + 1) / m + Q / m tokens + the
    fixed step overhead), plus B x the per-sequence overhead. k = 0 is `iteration_s`."""
    m = steps.micro_batches(batch)
    b, q = batch / m, prefill_tokens / m
    pass_s = verify_parts(steps, b, context_tokens, draft_tokens, q, prefill_context_tokens).total_s
    # the engine's per-sequence cost counts sequences, not the k + 1 positions each checks
    return steps.cycle_s(pass_s, b * (draft_tokens + 1) + q, batch)


@dataclass(frozen=True)
class SpeculativeSteps:
    """A replica's step model with speculation: one iteration is one speculation cycle.

    Build it with `speculative_steps`. `draft_steps` is the draft model's step model (None
    for a drafter given by its cost ratio).
    """

    steps: StepModel
    speculation: Speculation
    draft_steps: StepModel | None = None
    dp: int = 1
    """Attention DP groups of the target: each group drafts for its own sequences."""

    @property
    def tokens(self) -> int:
        """k."""
        return self.speculation.tokens

    @property
    def expected_tokens(self) -> float:
        """E."""
        return self.speculation.expected_tokens

    def draft_step_s(self, batch: float, context_tokens: float) -> float:
        """One draft step at batch B and context c, without the engine overhead."""
        if self.draft_steps is not None:
            group = batch / self.dp
            draft = self.draft_steps
            return draft.decode_step_s(group, context_tokens) - draft.overhead_s
        ratio = self.speculation.draft_cost_ratio or 0.0
        return ratio * (self.steps.decode_step_s(batch, context_tokens) - self.steps.overhead_s)

    def draft_prefill_s(self, prefill_tokens: float, prefill_context_tokens: float) -> float:
        """The drafter's share of the prompt tokens riding in a cycle."""
        if prefill_tokens <= 0:
            return 0.0
        pairs = prefill_tokens * prefill_context_tokens
        if self.draft_steps is not None:
            return self.draft_steps.pass_s(0.0, 0.0, prefill_tokens / self.dp, pairs / self.dp)
        ratio = self.speculation.draft_cost_ratio or 0.0
        return ratio * self.steps.pass_s(0.0, 0.0, prefill_tokens, pairs)

    def iteration_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> float:
        """One cycle at batch B: k draft steps + the drafter's prompt share + the verify
        iteration (with the prompt tokens riding along)."""
        k = self.tokens
        return (
            k * self.draft_step_s(batch, context_tokens)
            + self.draft_prefill_s(prefill_tokens, prefill_context_tokens)
            + verify_iteration_s(
                self.steps, batch, context_tokens, k, prefill_tokens, prefill_context_tokens
            )
        )

    def iterations_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_loads: list[float],
        prefill_context_tokens: float,
    ) -> list[float]:
        """`iteration_s` at one batch and each of several prompt loads, in order (the
        interface of `StepModel.iterations_s`, which `models.serving.batch_model` calls)."""
        return [
            self.iteration_s(batch, context_tokens, load, prefill_context_tokens)
            for load in prefill_loads
        ]

    def iteration_parts(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> PassParts:
        """The verify pass of one micro-batch, split into its roofline terms (for naming
        the roof; the draft steps are not in it)."""
        m = self.steps.micro_batches(batch)
        b, q = batch / m, prefill_tokens / m
        return verify_parts(self.steps, b, context_tokens, self.tokens, q, prefill_context_tokens)

    def tpot_s(self, batch: float, context_tokens: float) -> float:
        """Mean time per output token at batch B with no prompts riding: cycle / E."""
        return self.iteration_s(batch, context_tokens) / self.expected_tokens

    def speedup(self, batch: float, context_tokens: float) -> float:
        """Plain decode step / speculative TPOT at batch B (> 1: speculation pays)."""
        return self.steps.decode_step_s(batch, context_tokens) / self.tpot_s(batch, context_tokens)


def speculative_steps(
    gpu: GpuSpec,
    steps: StepModel,
    speculation: Speculation,
    weight_precision: Precision,
    kv_precision: Precision,
    efficiency: Efficiency,
    dp: int = 1,
) -> SpeculativeSteps:
    """The speculative step model of a replica whose target step model is `steps`: a
    draft model gets its own `step_model` on the same GPU type at `draft_tp`, PP 1, the
    replica's precisions (FP8 on a GPU without it falls back to BF16) and efficiency."""
    draft_steps = None
    if speculation.draft is not None:
        draft = speculation.draft
        precision = weight_precision if gpu.supports(weight_precision) else Precision.BF16
        draft_steps = step_model(
            gpu, draft, precision, kv_precision, draft_tp(draft, steps.tp), 1, efficiency
        )
    return SpeculativeSteps(steps, speculation, draft_steps, dp)


# --- the table perf prints ------------------------------------------------------------


@dataclass(frozen=True)
class SpeculationRow:
    """Speculation at one batch: E, the cycle, the TPOT, the speed-up, the best k."""

    batch: int
    expected_tokens: float
    cycle_s: float
    """k draft steps + the verify iteration."""
    decode_step_s: float
    """The plain decode iteration at the same batch."""
    tpot_s: float
    """cycle / E."""
    speedup: float
    best_tokens: int
    """The draft length 0..max that gives the lowest TPOT at this batch (0: off)."""
    best_speedup: float


def best_tokens(
    spec: SpeculativeSteps, batch: float, context_tokens: float, max_tokens: int
) -> tuple[int, float]:
    """The draft length k in 0..max_tokens with the lowest TPOT at batch B, and its
    speed-up (k = 0: plain decoding, speed-up 1)."""
    best, best_speedup = 0, 1.0
    for k in range(1, max_tokens + 1):
        trial = replace(spec, speculation=replace(spec.speculation, tokens=k))
        gain = trial.speedup(batch, context_tokens)
        if gain > best_speedup:
            best, best_speedup = k, gain
    return best, best_speedup


def speculation_table(
    spec: SpeculativeSteps,
    context_tokens: float,
    batches: list[int],
    max_tokens: int | None = None,
) -> list[SpeculationRow]:
    """One row per batch; the best k searched over 1..max_tokens (default 2k)."""
    limit = max_tokens if max_tokens is not None else 2 * spec.tokens
    rows = []
    for batch in batches:
        cycle_s = spec.iteration_s(batch, context_tokens)
        tpot_s = cycle_s / spec.expected_tokens
        decode_s = spec.steps.decode_step_s(batch, context_tokens)
        k, gain = best_tokens(spec, batch, context_tokens, limit)
        rows.append(
            SpeculationRow(
                batch=batch,
                expected_tokens=spec.expected_tokens,
                cycle_s=cycle_s,
                decode_step_s=decode_s,
                tpot_s=tpot_s,
                speedup=decode_s / tpot_s,
                best_tokens=k,
                best_speedup=gain,
            )
        )
    return rows


def crossover_batch(spec: SpeculativeSteps, context_tokens: float, max_batch: int) -> int | None:
    """The smallest whole batch at which speculation is slower than plain decoding
    (speed-up < 1), by doubling then bisection (the speed-up falls with the batch);
    None when it still pays at `max_batch`, 1 when it never pays."""
    if max_batch < 1:
        return None

    def slower(batch: int) -> bool:
        return spec.speedup(batch, context_tokens) < 1.0

    if slower(1):
        return 1
    low, high = 1, 2
    while high < max_batch and not slower(high):
        low, high = high, high * 2
    high = min(high, max_batch)
    if not slower(high):
        return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if slower(middle) else (middle, high)
    return high


def batch_buckets(max_batch: int) -> list[int]:
    """1, 2, 4, ... up to `max_batch` (and `max_batch` itself)."""
    if max_batch < 1:
        return []
    buckets = [2**i for i in range(int(math.log2(max_batch)) + 1)]
    return buckets if buckets[-1] == max_batch else [*buckets, max_batch]
