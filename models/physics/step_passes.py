"""Roofline step times of one replica: prefill of a prompt, a decode iteration at batch B.

The FLOP counts live in models/physics/flop_counts.py, the all-reduces in
models/physics/collectives.py, a pass's roofline terms in models/physics/pass_parts.py and the MoE
routing arithmetic in models/physics/moe.py; `models.physics.step_time.step_model` splits them
over the GPUs of a layout, and this module's `StepModel` times passes, iterations and
prefills from those per-GPU coefficients.

A forward pass through one pipeline stage, on one GPU of it, runs the linear layers
(GEMMs) and attention as separate kernels, so each takes the larger of its compute and
memory time and the times add:

    pass_s = max(linear FLOPs / linear rate, weight bytes / bandwidth)
           + max(decode attention FLOPs / attention rate, KV bytes / bandwidth)
           + prefill attention FLOPs / attention rate        (compute-bound)
           + all-reduces

    rates: dense peak x prefill_flops_fraction (prompt tokens) or x decode_flops_fraction
    (decode tokens); bandwidth: peak HBM x hbm_fraction

When everything is memory-bound this is (weights + KV bytes) / bandwidth, when everything
is compute-bound it is FLOPs / rate: the larger of the two roofs, as the textbook step;
in between, the kernels do not overlap, which is what measured mixed steps show.

A decode pass reads the stage's weights once (a mixture-of-experts layer reads only the
experts the batch touches) and every resident sequence's KV cache. Tensor parallelism
pays two all-reduces per layer per pass (`models.physics.collectives`), each a fixed latency plus
the ring's share of the message over the link that joins the TP group.

Mixture of experts under expert parallelism (`models.physics.moe` states the routing statistics
and the all-to-all): with `dp` attention groups the attention, the dense layers and the
KV reads of a pass are those of the busiest group: 1/dp of the decode sequences (the
engine evens their counts) with the busiest group's KV (`context_cv`), and the prompts
that the busiest group prefills whole (`prompt_tokens`; both set per traffic mix by
`StepModel.with_group_loads`, else the even 1/dp share); the routed experts
see all T tokens of the pass, spread over the `ep` ranks, and the slowest rank sets the
pass: its expert FLOPs are the mean's x the load imbalance, it reads the experts its
tokens touch, and it waits for the dispatch and combine all-to-alls of every MoE layer.
The routed experts' grouped GEMM is its own kernel beside the attention-side linear
layers: max(routed FLOPs x `ExpertLayout.routed_cost` / rate, (experts touched + the rows
its GEMMs stream) / bandwidth) adds to their max (`PassParts.expert_compute_s`,
`expert_read_s`), and the memory-bound kernels between its GEMMs (permute, gated
activation, combine) add their bytes / bandwidth (`expert_kernels_s`). With ep = dp = 1
the layout terms are the tensor-parallel ones.

A decode iteration advances every resident sequence by one token. With pipeline
parallelism the batch runs as m = min(pp, B) micro-batches and a micro-batch needs pp
stage passes plus pp hops per token, each stage pass an engine step of its own with its
fixed overhead, so the iteration takes pp x (pass + hop + overhead): stages idle (the
bubble) when fewer than pp micro-batches are in flight. The engine pays a fixed overhead
per step and a small one per sequence in it (`StepModel.cycle_s`). Prefill of a prompt runs in
chunks of at most `prefill_chunk_tokens`; chunks pipeline through the stages.
"""

import math
from dataclasses import dataclass, field, replace

from models.physics.flop_counts import expected_experts_touched
from models.physics.memory import chunked_read_share
from models.physics.moe import ExpertLayout, busiest_rank_share, group_kv_imbalance
from models.physics.overlap import on_shared_sms, overlapped_pass_s
from models.physics.pass_parts import PassParts, pass_total_s


@dataclass(frozen=True)
class StepModel:
    """Per-GPU coefficients of one replica layout, precomputed so that a step time is a
    handful of multiplications. Build it with `models.physics.step_time.step_model`."""

    tp: int
    pp: int
    chunk_tokens: int
    overhead_s: float
    # compute, per token on one GPU of the heaviest stage
    prefill_linear_flops_per_token: float
    decode_linear_flops_per_token: float
    prefill_attention_flops_per_pair: float
    decode_attention_flops_per_pair: float
    prefill_linear_flops_per_s: float
    decode_linear_flops_per_s: float
    prefill_attention_flops_per_s: float
    decode_attention_flops_per_s: float
    # memory, per GPU
    dense_weight_bytes: float
    """Weights read by every pass: all but the routed experts (and the input embedding)."""
    expert_weight_bytes: float
    """One routed expert's bytes on this GPU, summed over the stage's MoE layers."""
    experts: int
    experts_per_token: int
    kv_bytes_per_token: float
    hbm_bytes_per_s: float
    # communication
    allreduces_per_pass: int
    allreduce_latency_s: float
    allreduce_s_per_token: float
    hop_latency_s: float
    hop_s_per_token: float
    norm_allreduce_s: float = field(default=0.0, kw_only=True)
    """Per pass: the q/k norms' all-reduces of a model that normalises across heads
    (`LlmSpec.qk_norm_across_heads`: one per layer at TP > 1), a few bytes a token, so
    their latency only."""
    # mixture of experts (ep = dp = 1: the tensor-parallel terms above)
    dp: int = field(default=1, kw_only=True)
    """Attention data-parallel groups per stage."""
    routed_flops_per_token: float = field(default=0.0, kw_only=True)
    """Routed-expert FLOPs one replica token puts on the mean GPU of the stage:
    2 x k x expert params x stage MoE layers / (tp x dp) (included in the linear FLOPs
    per token above, which are per token of the GPU's own group)."""
    experts_layout: ExpertLayout | None = field(default=None, kw_only=True)
    sequence_overhead_s: float = field(default=0.0, kw_only=True)
    """Iteration cost per sequence in it (`Efficiency.sequence_overhead_s`)."""
    prompt_tokens: float = field(default=0.0, kw_only=True)
    """New tokens of one prompt riding in the iterations: with attention DP (dp > 1) each
    prompt is prefilled whole by one group, and the busiest group sets the pass
    (`models.physics.moe.busiest_rank_share`). 0: unknown, the prompt tokens spread evenly
    over the groups. `with_group_loads` sets it for a traffic mix."""
    attention_chunk_tokens: float = field(default=0.0, kw_only=True)
    """Chunk of the model's chunked-attention layers (Llama 4's attention_chunk_size); 0:
    none. Decode KV reads and prompt attention pairs are the full ones x
    `chunked_read_share` at the mean attended span. A sliding window's reads are charged
    in full (GPT-OSS: the TensorRT-LLM rows of its 128-token window layers read as full
    attention; charging 128 tokens makes its fit rows +26% to +73% optimistic), though
    its KV memory is windowed (`models.physics.memory.MemoryBudget.at_context`)."""
    chunked_layer_share: float = field(default=0.0, kw_only=True)
    """Share of the layers that attend within `attention_chunk_tokens`."""
    context_cv: float = field(default=0.0, kw_only=True)
    """Spread (coefficient of variation) of one resident sequence's context: with
    attention DP the busiest group's decode attention is the mean's x
    `models.physics.moe.group_kv_imbalance`. 0: every group at the mean."""
    two_batch_overlap: bool = field(default=False, kw_only=True)
    """Each pass of an expert-parallel layout runs as two micro-batches of half its
    tokens, one's dispatch and combine in flight while the other computes
    (`Efficiency.overlaps`: the switch on and the engine running it at this layout;
    `_moe_pass_terms`)."""
    overlap_token_floors: tuple[float, float] = field(default=(0.0, 0.0), kw_only=True)
    """Tokens per attention-DP rank a pass needs before the engine splits it, (decode
    only, with prompt tokens): below them a `two_batch_overlap` pass runs whole
    (`models.physics.overlap.overlap_token_floors`)."""
    overlap_compute_share: float = field(default=1.0, kw_only=True)
    """Share of the GPU's SMs an overlapped prefill's compute keeps beside the
    communication kernels (`models.physics.overlap.overlap_compute_share`)."""
    overlap_comm_stretch: float = field(default=1.0, kw_only=True)
    """An overlapped prefill's all-to-all over its time alone
    (`models.physics.overlap.OVERLAPPED_NORMAL_COMM_STRETCH`); 1: at its own speed."""
    dispatch_share: float = field(default=0.5, kw_only=True)
    """The dispatch's share of the all-to-all's bytes (FP8 dispatch, BF16 combine: 1 / 3;
    `models.physics.moe.dispatch_bytes_per_element`)."""

    def with_group_loads(self, prompt_tokens: float, context_cv: float = 0.0) -> "StepModel":
        """This model for iterations whose prompts carry `prompt_tokens` new tokens each
        and whose resident contexts spread with `context_cv` (itself when the layout has
        one attention group: nothing changes)."""
        if self.dp == 1 or self.experts_layout is None:
            return self
        return replace(self, prompt_tokens=prompt_tokens, context_cv=context_cv)

    def decode_group_share(self, decode_tokens: float) -> float:
        """Share of the decode attention (FLOPs and KV reads) on the busiest group:
        1/dp x `group_kv_imbalance` of its decode_tokens / dp sequences."""
        return group_kv_imbalance(decode_tokens, self.dp, self.context_cv) / self.dp

    def prefill_group_share(self, prefill_tokens: float) -> float:
        """Share of a pass's `prefill_tokens` prompt tokens on the busiest attention
        group. Each group schedules its own prompts under its own token cap
        c = chunk_tokens / dp (`max_num_tokens` per rank), so a prompt of P tokens rides
        as chunks of min(P, c): the busiest group holds `busiest_rank_share` of the
        Q / min(P, c) chunks, never more than its cap c / Q and never less than 1/dp.
        1/dp when the prompt size is unknown."""
        if self.prompt_tokens <= 0 or prefill_tokens <= 0:
            return 1.0 / self.dp
        cap = self.chunk_tokens / self.dp
        chunks = prefill_tokens / min(self.prompt_tokens, cap)
        busiest = min(busiest_rank_share(chunks, self.dp), cap / prefill_tokens)
        return max(busiest, 1.0 / self.dp)

    def pass_parts(
        self,
        decode_tokens: float,
        decode_kv_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_pairs: float = 0.0,
    ) -> PassParts:
        """One forward pass of one stage on one GPU.

        Args:
            decode_tokens: decode tokens in the pass (one per sequence).
            decode_kv_tokens: cached tokens those sequences attend to, summed.
            prefill_tokens: prompt tokens in the pass.
            prefill_pairs: (query, key) pairs of those prompt tokens, summed.
        """
        return PassParts(
            *self._pass_terms(decode_tokens, decode_kv_tokens, prefill_tokens, prefill_pairs)
        )

    def _pass_terms(
        self,
        decode_tokens: float,
        decode_kv_tokens: float,
        prefill_tokens: float,
        prefill_pairs: float,
    ) -> tuple[float, ...]:
        """The roofline terms of `pass_parts`, in `PassParts`' field order (a tuple:
        the capacity searches time millions of passes and need no record of each)."""
        if self.attention_chunk_tokens:  # chunked layers attend within their chunk
            decode_kv_tokens *= self._chunk_share(decode_kv_tokens, decode_tokens)
            prefill_pairs *= self._chunk_share(prefill_pairs, prefill_tokens)
        if self.experts_layout is not None:
            return self._moe_pass_terms(
                self.experts_layout, decode_tokens, decode_kv_tokens, prefill_tokens, prefill_pairs
            )
        linear_compute_s = (
            prefill_tokens * self.prefill_linear_flops_per_token / self.prefill_linear_flops_per_s
            + decode_tokens * self.decode_linear_flops_per_token / self.decode_linear_flops_per_s
        )
        tokens = decode_tokens + prefill_tokens
        weights = self.dense_weight_bytes
        if self.experts:
            touched = expected_experts_touched(self.experts, self.experts_per_token, tokens)
            weights += touched * self.expert_weight_bytes
        comm_s = self.norm_allreduce_s + self.allreduces_per_pass * (
            self.allreduce_latency_s + tokens * self.allreduce_s_per_token
        )
        return (
            linear_compute_s,
            weights / self.hbm_bytes_per_s,
            decode_kv_tokens
            * self.decode_attention_flops_per_pair
            / self.decode_attention_flops_per_s,
            decode_kv_tokens * self.kv_bytes_per_token / self.hbm_bytes_per_s,
            prefill_pairs
            * self.prefill_attention_flops_per_pair
            / self.prefill_attention_flops_per_s,
            comm_s,
        )

    def _chunk_share(self, pairs: float, tokens: float) -> float:
        """`chunked_read_share` at the mean attended span pairs / tokens (1 with no
        tokens)."""
        if tokens <= 0:
            return 1.0
        span = pairs / tokens
        return chunked_read_share(span, self.attention_chunk_tokens, self.chunked_layer_share)

    def _moe_pass_terms(
        self,
        layout: ExpertLayout,
        decode_tokens: float,
        decode_kv_tokens: float,
        prefill_tokens: float,
        prefill_pairs: float,
    ) -> tuple[float, ...]:
        """`pass_parts` of an MoE model on the slowest GPU (`_micro_batch_terms`): the pass
        whole, or under `two_batch_overlap` (set where the engine runs it:
        `models.physics.overlap.engine_runs_overlap`; never without the experts' all-to-all
        at EP above 1; a pass of fewer tokens a rank than the engine's floor,
        `overlap_token_floors`, runs whole) as two micro-batches of half its tokens (each
        GPU splits its own sequences, so the busiest attention group's shares are the whole
        pass's), timed by `overlapped_pass_s`. Each half reads the weights again, runs its
        grouped GEMM at half the rows per expert and pays its own collectives' latency:
        what the overlap costs; in prefill its compute runs on the SMs the communication
        leaves (`overlap_compute_share`) and its all-to-all runs slower than alone
        (`overlap_comm_stretch`). Its terms read as the two halves' compute, with the
        all-to-all time that shows past it as communication."""
        busiest = self.prefill_group_share(prefill_tokens)
        attention_share = self.decode_group_share(decode_tokens)
        rank_tokens = (decode_tokens + prefill_tokens) / self.dp
        floor = self.overlap_token_floors[1 if prefill_tokens > 0 else 0]
        split = self.two_batch_overlap and layout.alltoall_collectives and layout.ep > 1
        if not (split and rank_tokens >= floor):
            *terms, alltoall_s = self._micro_batch_terms(
                layout, busiest, attention_share,
                decode_tokens, decode_kv_tokens, prefill_tokens, prefill_pairs,
            )  # fmt: skip
            terms[5] += alltoall_s
            return tuple(terms)
        *half, alltoall_s = self._micro_batch_terms(
            layout, busiest, attention_share,
            decode_tokens / 2, decode_kv_tokens / 2, prefill_tokens / 2, prefill_pairs / 2,
        )  # fmt: skip
        if prefill_tokens > 0:
            half = list(on_shared_sms(tuple(half), self.overlap_compute_share))
            alltoall_s *= self.overlap_comm_stretch
        terms = [2.0 * term for term in half]
        expert_s = max(half[6], half[7]) + half[8]
        attention_side_s = pass_total_s(*half) - expert_s
        pass_s = overlapped_pass_s(
            attention_side_s, expert_s, alltoall_s, self.dispatch_share, prefill_tokens > 0
        )
        terms[5] += pass_s - 2.0 * (attention_side_s + expert_s)
        return tuple(terms)

    def _micro_batch_terms(
        self,
        layout: ExpertLayout,
        busiest: float,
        attention_share: float,
        decode_tokens: float,
        decode_kv_tokens: float,
        prefill_tokens: float,
        prefill_pairs: float,
    ) -> tuple[float, ...]:
        """The roofline terms of one (micro-)batch of an MoE model on the slowest GPU, the
        all-to-all apart: `PassParts`' fields in order, the communication the TP
        all-reduces alone, then the dispatch and combine. The attention side (the
        non-routed linear layers, attention, the TP all-reduces) at the group's 1/dp share
        of the decode tokens and the busiest group's share w (`busiest`,
        `prefill_group_share`) of the prompt tokens: a prompt token's attention-side FLOPs
        on a GPU of its group are prefill linear - dp x routed, a decode token's 1/dp x
        decode linear - routed. The routed experts are their own kernel (the grouped
        GEMM): all T tokens' routed FLOPs x the imbalance f x `ExpertLayout.routed_cost`,
        against the experts the slowest rank touches, plus the kernels between its GEMMs;
        then the all-to-alls."""
        share = 1.0 / self.dp
        tokens = decode_tokens + prefill_tokens
        routed = self.routed_flops_per_token
        prefill_rate, decode_rate = self.prefill_linear_flops_per_s, self.decode_linear_flops_per_s
        attention_side_s = (
            prefill_tokens * busiest * (self.prefill_linear_flops_per_token - self.dp * routed)
        ) / prefill_rate + decode_tokens * (
            share * self.decode_linear_flops_per_token - routed
        ) / decode_rate
        imbalance = layout.imbalance(tokens)  # each term below at this T
        expert_s = (
            imbalance
            * layout.routed_cost(tokens, imbalance)
            * routed
            * (prefill_tokens / prefill_rate + decode_tokens / decode_rate)
        )
        rows = layout.rows(tokens, imbalance)
        expert_read_s = (
            layout.touched_per_rank(tokens, imbalance) * self.expert_weight_bytes
            + rows * layout.row_bytes
        ) / self.hbm_bytes_per_s
        group_tokens = share * decode_tokens + busiest * prefill_tokens
        allreduce_s = self.norm_allreduce_s + self.allreduces_per_pass * (
            self.allreduce_latency_s + group_tokens * self.allreduce_s_per_token
        )
        return (
            attention_side_s,
            self.dense_weight_bytes / self.hbm_bytes_per_s,
            attention_share
            * decode_kv_tokens
            * self.decode_attention_flops_per_pair
            / self.decode_attention_flops_per_s,
            attention_share * decode_kv_tokens * self.kv_bytes_per_token / self.hbm_bytes_per_s,
            busiest
            * prefill_pairs
            * self.prefill_attention_flops_per_pair
            / self.prefill_attention_flops_per_s,
            allreduce_s,
            expert_s,
            expert_read_s,
            rows * layout.kernel_row_bytes / self.hbm_bytes_per_s,
            layout.alltoall_s(tokens, prefill_tokens, imbalance),
        )

    def pass_s(
        self,
        decode_tokens: float,
        decode_kv_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_pairs: float = 0.0,
    ) -> float:
        """`pass_parts(...).total_s`, without building the record (the same arithmetic)."""
        return pass_total_s(
            *self._pass_terms(decode_tokens, decode_kv_tokens, prefill_tokens, prefill_pairs)
        )

    def hop_s(self, tokens: float) -> float:
        """One pipeline hand-off of `tokens` tokens' hidden states (0 without PP)."""
        if self.pp == 1:
            return 0.0
        return self.hop_latency_s + tokens * self.hop_s_per_token

    def micro_batches(self, batch: float) -> float:
        """Micro-batches in flight: min(pp, max(batch, 1))."""
        return min(float(self.pp), max(batch, 1.0))

    def iteration_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> float:
        """One decode iteration: every one of `batch` sequences (mean context
        `context_tokens`) advances a token while `prefill_tokens` prompt tokens ride along
        (each attending to `prefill_context_tokens` tokens on average).

        pp = 1: pass + overhead. pp > 1: m = min(pp, B) micro-batches of B/m sequences,
        pp x (pass + hop + fixed step overhead), the pass that of `iteration_parts`
        (`cycle_s`). Both add B x the per-sequence overhead.
        """
        m = min(float(self.pp), max(batch, 1.0))  # `micro_batches(batch)`
        b, q = batch / m, prefill_tokens / m  # one micro-batch's tokens
        terms = self._pass_terms(b, b * context_tokens, q, q * prefill_context_tokens)
        return self.cycle_s(pass_total_s(*terms), b + q, batch)

    def cycle_s(self, pass_s: float, micro_batch_tokens: float, batch: float) -> float:
        """An iteration from its stage pass `pass_s` (one micro-batch of
        `micro_batch_tokens` tokens on one stage) at `batch` sequences:

            pp = 1:  pass + overhead + B x sequence overhead
            pp > 1:  pp x (pass + hop + overhead) + B x sequence overhead

        With pipeline parallelism every micro-batch is an engine step of its own on every
        stage: the executor fetches, schedules and launches one micro-batch per turn of its
        loop (TensorRT-LLM's PyExecutor `_executor_loop_pp`, `microbatch_id` cycling over
        the pp slots, each turn calling `_schedule()` and `_forward_step`; vLLM V1's
        `EngineCore.step_with_batch_queue` schedules one batch a step into a queue of pp
        in flight), so a sequence
        comes round once every pp stage turns, each paying the fixed step overhead. The
        per-sequence overhead is paid once per sequence (B / m on each of the m
        micro-batches). At pp = 1 the two forms agree."""
        sequences_s = self.sequence_overhead_s * batch
        if self.pp == 1:
            return pass_s + self.overhead_s + sequences_s
        return self.pp * (pass_s + self.hop_s(micro_batch_tokens) + self.overhead_s) + sequences_s

    def iterations_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_loads: list[float],
        prefill_context_tokens: float,
    ) -> list[float]:
        """`iteration_s` at one batch and each of several prompt loads (prefill tokens),
        in order: the same arithmetic, with the decode side's terms worked out once (the
        iteration mixture of `models.serving.batch_model` times ~10 loads at every batch). A
        subclass that adds to `iteration_s` (`models.colocation.lora.LoraStepModel`) gets its own
        `iteration_s` at each load."""
        if type(self).iteration_s is not StepModel.iteration_s:  # a subclass adds a cost
            return [
                self.iteration_s(batch, context_tokens, load, prefill_context_tokens)
                for load in prefill_loads
            ]
        m = min(float(self.pp), max(batch, 1.0))
        b = batch / m
        if self.experts and self.experts_layout is None:  # experts without a layout: load by load
            return [
                self.iteration_s(batch, context_tokens, load, prefill_context_tokens)
                for load in prefill_loads
            ]
        # the chunks' reads, applied here as `_pass_terms` applies them
        context_tokens *= self._chunk_share(context_tokens, 1.0)
        prefill_context_tokens *= self._chunk_share(prefill_context_tokens, 1.0)
        if self.experts_layout is not None:
            passes_s = self._moe_passes_s(
                self.experts_layout, b, b * context_tokens, m, prefill_loads, prefill_context_tokens
            )
        else:
            passes_s = self._dense_passes_s(
                b, b * context_tokens, m, prefill_loads, prefill_context_tokens
            )
        if self.pp == 1:  # `cycle_s` at pp = 1, its sums in its order
            overhead_s, sequences_s = self.overhead_s, self.sequence_overhead_s * batch
            return [pass_s + overhead_s + sequences_s for pass_s in passes_s]
        return [
            self.cycle_s(pass_s, b + load / m, batch)
            for pass_s, load in zip(passes_s, prefill_loads, strict=True)
        ]

    def _dense_passes_s(
        self,
        b: float,
        kv_tokens: float,
        m: float,
        prefill_loads: list[float],
        prefill_context_tokens: float,
    ) -> list[float]:
        """`pass_s` of one micro-batch (b decode tokens attending to `kv_tokens`, load / m
        prompt tokens) at each load: `_pass_terms`' arithmetic term by term, the decode
        side's terms once."""
        decode_linear_s = b * self.decode_linear_flops_per_token / self.decode_linear_flops_per_s
        attention_s = max(
            kv_tokens * self.decode_attention_flops_per_pair / self.decode_attention_flops_per_s,
            kv_tokens * self.kv_bytes_per_token / self.hbm_bytes_per_s,
        )
        weight_read_s = self.dense_weight_bytes / self.hbm_bytes_per_s
        prefill_linear = self.prefill_linear_flops_per_token
        prefill_linear_rate = self.prefill_linear_flops_per_s
        prefill_attention = self.prefill_attention_flops_per_pair
        prefill_attention_rate = self.prefill_attention_flops_per_s
        allreduces, latency_s = self.allreduces_per_pass, self.allreduce_latency_s
        per_token_s = self.allreduce_s_per_token
        passes_s = []
        for load in prefill_loads:
            q = load / m
            linear_compute_s = q * prefill_linear / prefill_linear_rate + decode_linear_s
            linear_s = max(linear_compute_s, weight_read_s)
            prefill_attention_s = (
                q * prefill_context_tokens * prefill_attention / prefill_attention_rate
            )
            comm_s = self.norm_allreduce_s + allreduces * (latency_s + (b + q) * per_token_s)
            passes_s.append(linear_s + (attention_s + prefill_attention_s) + comm_s)
        return passes_s

    def _moe_passes_s(
        self,
        layout: ExpertLayout,
        b: float,
        kv_tokens: float,
        m: float,
        prefill_loads: list[float],
        prefill_context_tokens: float,
    ) -> list[float]:
        """`_dense_passes_s` of an MoE model: `_moe_pass_terms` at each load (its terms
        all depend on the load's tokens but the decode attention)."""
        return [
            pass_total_s(
                *self._moe_pass_terms(
                    layout, b, kv_tokens, load / m, load / m * prefill_context_tokens
                )
            )
            for load in prefill_loads
        ]

    def prompt_kinks(self, batch: float) -> tuple[float, ...] | None:
        """The prompt loads (tokens in one iteration at `batch` sequences) where the
        iteration changes roof, with `iteration_s` linear in the load between them; None
        where it is not piecewise linear (a mixture of experts: the experts touched and
        their imbalance bend it). A dense pass is max(linear compute, weight read) plus
        terms linear in the prompt tokens q = load / m, so its one kink is where the
        compute, q x prefill linear FLOPs / rate + decode linear, meets the weight read;
        none if the decode tokens' compute already exceeds it. A subclass's added cost
        (`models.colocation.lora.LoraStepModel`) is linear in the tokens, so the kinks
        stay."""
        if self.experts or self.experts_layout is not None:
            return None
        m = min(float(self.pp), max(batch, 1.0))
        decode_s = batch / m * self.decode_linear_flops_per_token / self.decode_linear_flops_per_s
        per_token_s = self.prefill_linear_flops_per_token / self.prefill_linear_flops_per_s
        read_s = self.dense_weight_bytes / self.hbm_bytes_per_s
        if per_token_s <= 0 or decode_s >= read_s:
            return ()
        return (m * (read_s - decode_s) / per_token_s,)

    def iteration_parts(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> PassParts:
        """`iteration_s`'s stage pass in roofline terms (B/m sequences, Q/m prompt tokens)."""
        m = self.micro_batches(batch)
        b, q = batch / m, prefill_tokens / m
        return self.pass_parts(b, b * context_tokens, q, q * prefill_context_tokens)

    def decode_step_s(self, batch: float, context_tokens: float) -> float:
        """A decode iteration with no prefill riding along."""
        return self.iteration_s(batch, context_tokens)

    def prefill_s(self, prompt_tokens: float, cached_tokens: float = 0.0) -> float:
        """Unloaded latency of prefilling one prompt of `prompt_tokens` new tokens after
        `cached_tokens` prefix-cache hits, up to its first token.

        n = ceil(P / chunk) chunks of P/n tokens, each attending on average to
        cached + P/2 tokens; chunks pipeline through the stages, each a step of its own on
        every stage (`cycle_s`): (n + pp - 1) x (pass + hop + overhead).
        """
        if prompt_tokens <= 0:
            return self.overhead_s
        chunks = math.ceil(prompt_tokens / self.chunk_tokens)
        t_pass = self._chunk_pass_s(prompt_tokens / chunks, prompt_tokens, cached_tokens)
        return (chunks + self.pp - 1) * (t_pass + self.overhead_s)

    def prefill_tokens_per_s(self, prompt_tokens: float, cached_tokens: float = 0.0) -> float:
        """Prompt tokens/s of a replica doing nothing but prefill, with full chunks in
        every stage: chunk / (pass + hop + overhead), prompts of `prompt_tokens` new tokens."""
        chunk = float(self.chunk_tokens)
        t_chunk = self._chunk_pass_s(chunk, prompt_tokens, cached_tokens) + self.overhead_s
        return chunk / t_chunk

    def _chunk_pass_s(self, chunk: float, prompt_tokens: float, cached_tokens: float) -> float:
        """One stage pass and hop of a prefill chunk of `chunk` tokens from a prompt of
        `prompt_tokens` new tokens after `cached_tokens` hits: each chunk token attends on
        average to cached + P/2 tokens."""
        pairs = chunk * (cached_tokens + prompt_tokens / 2)
        return self.pass_s(0.0, 0.0, chunk, pairs) + self.hop_s(chunk)
