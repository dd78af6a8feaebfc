"""Expert parallelism: how a mixture-of-experts layer's work and traffic fall on the GPUs.

Layout (the rule `models.physics.memory.expert_layout_problem` enforces). A replica is tp x pp x
dp GPUs: `pp` pipeline stages, each with `dp` attention data-parallel groups of `tp` GPUs.
Attention, dense MLPs, shared experts, the router, the embedding and the LM head run per group,
split by TP, on the group's own sequences. The routed experts of a stage are split over all G =
tp x dp GPUs of the stage as `ep` expert-parallel ranks of experts / ep whole experts, each
expert split by TP over moe_tp = G / ep GPUs. With ep = dp = 1 this is plain tensor parallelism.

Routing statistics (uniform top-k routing, the assumption of the closed forms below):
- Experts touched. T tokens each choosing k of E experts leave an expert idle with
  probability (1 - k/E)^T, so E (1 - (1 - k/E)^T) experts are read per step; an EP rank
  holding E/ep of them reads (E/ep) (1 - (1 - k/E)^T) on average.
- Load imbalance. The T k expert choices land on ep ranks as a multinomial(T k; 1/ep)
  count (each choice taken independent: a token's k choices are distinct experts, which
  spreads them slightly more evenly than this), so the busiest rank's expected load is
  `expected_max_multinomial` (exact up to 512 choices, then the mean plus
  E[max of ep standard normals] binomial standard deviations; the older
  sqrt(2 ln ep) bound overstated that factor, 2.04 against 1.42 at ep = 8):

      imbalance = E[max rank load] / mean = busiest_rank_share(T k, ep) x ep,

  linear in T k between integers (fewer choices than one: one rank holds it all), capped
  at the most a rank can receive, T min(k, E/ep) (every token sends at most
  min(k, E/ep) of its choices to one rank): ep x min(k, E/ep) / k. It is 1 at ep = 1
  and falls towards 1 as the batch grows. Real routers are skewed beyond uniform
  (popular experts); engines rebalance with redundant experts (EPLB), which is what
  makes the uniform statistic a fair estimate. `routing_skew` multiplies the excess for
  a model whose measured routing is more skewed. With R redundant experts a rank holds
  (E + R) / ep slots, copies of the hottest experts placed so every slot's expected load
  is the mean's: a choice lands on a slot with probability 1 / (E + R), on a rank with
  1 / ep, so the statistics above hold over E + R slots, the imbalance the same
  multinomial (its cap over (E + R) / ep slots). EPLB removes the skew, not this noise.
- The slowest rank sets the step: its expert FLOPs, the experts it reads and the tokens
  it receives are the mean's times the imbalance.

The grouped GEMM (the routed experts' own kernel). Its rows per touched expert on the busiest
rank, n = T k / ep x imbalance / experts touched (at least one), run below the large-batch rate:
efficiency n / (n + n_half), a saturating curve (`gemm_half_tokens`, fitted per generation; a
128-row tile holding a few rows wastes the rest), so the routed FLOPs cost 1 / efficiency of
their roofline time (`ExpertLayout.routed_cost`). Experts stored 4-bit on a GPU without FP4
tensor cores are dequantised and multiplied at BF16 (`expert_compute_precision`: W4A16, GPT-OSS
on Hopper), twice an FP8 layer's time, at most `dequant_gemm_rate` of the dense rate (Marlin on
Ampere: `expert_layout`'s `dequant_rate`). Beside the expert weights each routed row moves its
activations through HBM. The GEMMs stream their own operands while they compute
(`expert_row_bytes`: the gathered row in, the gate/up product out, the activated row in, the
BF16 output out), which for fine-grained experts (hidden 2,048, intermediate 768, k = 8) is as
much as the GEMM's FLOPs allow at the ridge. Between the GEMMs run memory-bound kernels of their
own, whose time adds to the GEMMs' (`expert_kernel_row_bytes`): the permute of each token's row
into expert order, the gated activation unless the first GEMM fuses it
(`fuses_gated_activation`: TensorRT-LLM fuses it on its Ampere kernel only, never on the TMA
grouped GEMM of Hopper and Blackwell nor in FP8), and the combine of the k outputs. The Triton
kernel that dequantises MXFP4 experts on Hopper gathers its rows and applies the SwiGLU inside
its first matmul (`gathers_in_gemm`): only the combine runs beside it.

Attention data parallelism (the slowest DP rank). Decode sequences are spread evenly over the dp
attention groups (the engine balances their counts), but a prompt is prefilled whole by the one
group that admits it. An iteration that carries k prompts of P tokens puts them on the groups as
a multinomial(k; 1/dp, ..., 1/dp) count, and every group waits at the next all-to-all for the
busiest, so the attention-side prefill of the pass (the non-routed linear layers, prefill
attention, the TP all-reduces of the group) is that of E[max count] x P tokens, not k P / dp.
The expected maximum is computed exactly (`expected_max_multinomial`): with the cells' counts
written as independent Poisson(k/dp) variables conditioned on their sum being k (the
Poissonisation of the multinomial),

    P(max <= m | k) = [x^k] (sum_{j<=m} e^-l l^j / j! x^j)^dp / Poisson(k; k)   (l = k/dp)
    E[max | k]      = sum_{m>=0} (1 - P(max <= m | k)),

a polynomial power truncated at degree k. A fractional k (part of a prompt, or the normal points
of a busy iteration mixture) interpolates between its integer neighbours: a part-prompt sits on
one group, E[max | k] = k for k <= 1. Each group schedules under its own token cap c
(`max_num_tokens` per rank): a prompt longer than c rides as chunks of c, so the items are the Q
/ min(P, c) chunks and the busiest group holds at most c tokens
(`StepModel.prefill_group_share`). The routed experts are unaffected: the ep ranks see all the
tokens (`load_imbalance`). An offline run of fixed lengths (every request queued at once) is the
exception: the groups start, prefill, retire and refill their batches in the same iterations, so
each carries 1/dp of every load (`models.serving.batch_model.offline_lockstep`).

The decode attention of a group varies with its sequences' lengths: the engine evens
the groups' sequence counts, n = b/dp each, not their contexts. A resident sequence's
context is its prompt P plus its age a, and a reply of O' tokens is resident in
proportion to O' with its age uniform on [0, O'], so E[a] = E[O^2] / (2 E[O]) and
E[a^2] = E[O^3] / (3 E[O]); for lognormal replies E[O^n] = O^n (1 + cv_o^2)^(n(n-1)/2):

    Var[c] = P^2 cv_p^2 + O^2 ((1 + cv_o^2)^3 / 3 - (1 + cv_o^2)^2 / 4)
    cv_c   = sqrt(Var[c]) / (P + O (1 + cv_o^2) / 2)          (`resident_context_cv`)

(O^2 / 12 with fixed lengths). A group's KV is the sum of n such contexts, so the
busiest of dp groups holds (normal maximum, `expected_max_standard_normal`)

    f_kv = 1 + E[max of dp standard normals] x cv_c / sqrt(n),  at most dp,

of the mean: 1.014 at 400 sequences per group with ISL = OSL = 1,000 on 8 groups, 1.29
at 16 per group with P = O = 1,000 and cv_p = cv_o = 1 (`group_kv_imbalance`); its
decode attention (FLOPs and KV reads) is the mean's x f_kv.

All-to-all (dispatch before the experts, combine after). Each token's hidden state goes
to each of its k experts and comes back: 2 x k x hidden x bytes per token per MoE layer
when dispatch and combine have the same precision; here dispatch is FP8 when the weights
are FP8 or FP4 (DeepEP's and TensorRT-LLM's FP8 dispatch; block scales of 4 bytes per
128 elements not counted) and BF16 otherwise, combine is always BF16, so with whole
experts on each rank (moe_tp = 1, ep >= k)

      alltoall bytes per token per MoE layer = k x hidden x (dispatch + combine bytes).

That is the upper bound, one copy per expert. A true all-to-all sends a token once per
destination rank and fans it out there (DeepEP, TensorRT-LLM's MNNVL all-to-all), so a
token reaches the distinct ranks among its k choices, ep (1 - (1 - 1/ep)^k) of them on
average under uniform routing (5.25 for k = 8 over 8 ranks), and every one of the moe_tp
GPUs of each: copies = ep (1 - (1 - 1/ep)^k) x moe_tp. The engines' default within one
server is not that but an all-gather of every token to all G GPUs of the stage before
the experts and a reduce-scatter after (copies = G; `gathers_tokens`): TensorRT-LLM
enables its all-to-all only on a multi-node NVLink domain (GB200 NVL72) or with DeepEP
switched on (`select_alltoall_method_type`: else NotEnabled), SGLang's attention DP
gathers unless DeepEP is chosen, vLLM's default backend is allgather_reducescatter.
Across servers the deployments run DeepEP's all-to-all. At ep = 1 with attention DP both
are the all-gather: copies = moe_tp = G. At dp = 1 with no all-to-all backend nothing is
dispatched: every GPU holds every token (`models.physics.collectives.tokens_dispatched`).

A GPU sends its 1/G share of the step's tokens, of which (G - 1)/G leaves it; within a
node the bytes cross the scale-up link (NVLink), and the share bound for GPUs of other
nodes, (G - n) / G for n GPUs per node, crosses the NIC, the two in parallel. Prompt
tokens take DeepEP's forwarding kernels instead: across nodes the NIC carries one copy
per other node a token reaches, NVLink the rest (`models.physics.alltoall`). Each
collective pays a fixed latency (launch and synchronisation), two per MoE layer.
"""

import math
from dataclasses import dataclass
from functools import cache

from models.physics.alltoall import alltoall_link_s_per_byte, forwarded_link_s_per_copy_byte
from models.physics.collectives import tokens_dispatched
from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import ACTIVATION_BYTES_PER_ELEMENT
from models.physics.precision import Precision

ALLTOALL_LATENCY_S = 20e-6
"""Fixed latency of one dispatch or combine collective, seconds: the order of the
small-message time of NVLink all-to-all kernels (DeepEP's intranode kernels, TensorRT-LLM's
MNNVL all-to-all: tens of microseconds). An assumption until a fit moves it."""
COMBINE_BYTES_PER_ELEMENT = 2.0
"""The combine (expert outputs back to their tokens) is BF16."""


def moe_tp(tp: int, dp: int, ep: int) -> int:
    """GPUs each routed expert is split over: tp x dp / ep."""
    return tp * dp // ep


def experts_touched_per_rank(experts: int, experts_per_token: int, ep: int, tokens: float) -> float:
    """Expected experts one EP rank reads in a step of `tokens` tokens:
    (E / ep) x (1 - (1 - k/E)^T). At ep = 1 the E (1 - (1 - k/E)^T) of the whole layer."""
    if experts == 0 or tokens <= 0:
        return 0.0
    return experts / ep * (1 - (1 - experts_per_token / experts) ** tokens)


def load_imbalance(
    tokens: float, experts_per_token: int, ep: int, experts: int, routing_skew: float = 1.0
) -> float:
    """E[max rank load] / mean load over `ep` ranks for `tokens` tokens routed top-k:
    1 + routing_skew x (ep x busiest_rank_share(T k, ep) - 1), capped at
    ep x min(k, E/ep) / k (see the module docstring). 1 at ep = 1 or with no tokens."""
    if ep <= 1 or tokens <= 0:
        return 1.0
    choices = tokens * experts_per_token
    excess = ep * busiest_rank_share(choices, ep) - 1.0
    cap = ep * min(experts_per_token, experts / ep) / experts_per_token
    return min(1.0 + routing_skew * excess, cap)


MULTINOMIAL_EXACT_ITEMS = 512
"""Largest count of items (prompts over attention groups, expert choices over EP ranks)
whose busiest-bin expectation is computed exactly; beyond it the normal approximation
k/n + sd x E[max of n standard normals], sd = sqrt(k/n (1 - 1/n))
(`expected_max_standard_normal`; 1.1% below the exact value at 512 items on 8 bins)."""


@cache
def expected_max_standard_normal(count: int) -> float:
    """E[max of `count` independent standard normals] = integral of z n phi(z) Phi(z)^(n-1)
    dz, by the trapezoid rule on [-10, 10] (0 for one; 1/sqrt(pi) = 0.5642 for two)."""
    import numpy as np  # here, not at the top: numpy stays off dense paths (test_imports)

    z = np.linspace(-10.0, 10.0, 20001)
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = np.cumsum(phi) * (z[1] - z[0])
    density = count * phi * np.clip(cdf, 0.0, 1.0) ** (count - 1)
    return float(np.sum(z * density) * (z[1] - z[0]))


@cache
def expected_max_multinomial(items: int, ranks: int) -> float:
    """E[max count] of `items` items dropped uniformly on `ranks` bins, exactly (the
    module docstring's Poissonised formula; Gaussian beyond `MULTINOMIAL_EXACT_ITEMS`).
    Hand values: 2 on 2 bins is 1.5 (2 w.p. 1/2, 1 w.p. 1/2); 0 items, 0; 1 bin, k."""
    if items <= 0:
        return 0.0
    if ranks <= 1 or items == 1:
        return float(items)
    mean = items / ranks
    if items > MULTINOMIAL_EXACT_ITEMS:
        spread = math.sqrt(mean * (1 - 1 / ranks))
        return mean + spread * expected_max_standard_normal(ranks)
    import numpy as np  # here, not at the top: numpy stays off dense paths (test_imports)

    log_total = items * math.log(items) - items - math.lgamma(items + 1)  # Poisson(k; k)
    pmf = [math.exp(j * math.log(mean) - mean - math.lgamma(j + 1)) for j in range(items + 1)]
    expected = 0.0
    for top in range(items):
        cell = np.array(pmf[: top + 1])  # one bin's count, at most `top`
        power = np.array([1.0])
        base, exponent = cell, ranks
        while exponent:  # (cell)^ranks truncated at degree k, by squaring
            if exponent & 1:
                power = np.convolve(power, base)[: items + 1]
            base = np.convolve(base, base)[: items + 1]
            exponent >>= 1
        at_most = power[items] / math.exp(log_total) if len(power) > items else 0.0
        expected += 1 - min(at_most, 1.0)
        if at_most > 1 - 1e-12:
            break
    return expected


def busiest_rank_share(items: float, ranks: int) -> float:
    """Share of `items` whole items (an iteration's prompts over its attention groups,
    its expert choices over the EP ranks) that the busiest of `ranks` bins holds:
    E[max count] / k (`expected_max_multinomial`), linear in k between integers, 1 for
    k <= 1 (a part-item sits in one bin), 1/ranks as the limit of many items; 1/ranks
    with no items."""
    if ranks <= 1:
        return 1.0
    if items <= 0:
        return 1.0 / ranks
    if items <= 1:
        return 1.0
    low = math.floor(items)
    high_max = expected_max_multinomial(low + 1, ranks)
    low_max = expected_max_multinomial(low, ranks)
    return (low_max + (items - low) * (high_max - low_max)) / items


def resident_context_cv(
    prompt_tokens: float, prompt_scv: float, output_tokens: float, output_scv: float
) -> float:
    """Coefficient of variation of a resident decode sequence's context (prompt plus
    age; the module docstring derives it): sqrt(P^2 cv_p^2 + O^2 ((1 + cv_o^2)^3 / 3
    - (1 + cv_o^2)^2 / 4)) / (P + O (1 + cv_o^2) / 2). With fixed lengths
    (O / sqrt(12)) / (P + O / 2). 0 with no tokens."""
    spread = 1.0 + output_scv
    mean = prompt_tokens + output_tokens * spread / 2
    if mean <= 0:
        return 0.0
    age_variance = output_tokens**2 * (spread**3 / 3 - spread**2 / 4)
    return math.sqrt(prompt_tokens**2 * prompt_scv + age_variance) / mean


def group_kv_imbalance(sequences: float, groups: int, context_cv: float) -> float:
    """KV of the busiest of `groups` attention groups over the mean when `sequences`
    decode sequences are spread evenly by count and each context varies with
    `context_cv`: 1 + E[max of groups standard normals] x cv / sqrt(sequences / groups),
    at most `groups` (one group holding every token). 1 for one group or no spread."""
    if groups <= 1 or context_cv <= 0 or sequences <= 0:
        return 1.0
    per_group = max(sequences / groups, 1.0)
    excess = expected_max_standard_normal(groups) * context_cv / math.sqrt(per_group)
    return min(1.0 + excess, float(groups))


def dispatch_bytes_per_element(weight_precision: Precision) -> float:
    """Dispatch precision: FP8 (1 byte) when the weights are FP8 or FP4, else BF16."""
    return 1.0 if weight_precision is not Precision.BF16 else ACTIVATION_BYTES_PER_ELEMENT


def alltoall_bytes_per_token(llm: LlmSpec, weight_precision: Precision) -> float:
    """Dispatch plus combine bytes of one token through one MoE layer, one copy per
    expert (the upper bound): k x hidden x (dispatch bytes + combine bytes)."""
    per_element = dispatch_bytes_per_element(weight_precision) + COMBINE_BYTES_PER_ELEMENT
    return llm.experts_per_token * llm.hidden_size * per_element


def alltoall_copies(experts_per_token: int, ep: int, expert_tp: int) -> float:
    """GPUs one token's hidden state is sent to, once per destination rank: the expected
    distinct ranks among k uniform choices over ep, ep (1 - (1 - 1/ep)^k), x moe_tp."""
    return ep * (1 - (1 - 1 / ep) ** experts_per_token) * expert_tp


def alltoall_bytes_per_token_sent(
    llm: LlmSpec, weight_precision: Precision, ep: int, expert_tp: int = 1, gather: bool = False
) -> float:
    """Dispatch plus combine bytes of one token through one MoE layer as the kernels send
    them: copies x hidden x (dispatch bytes + combine bytes), copies = `alltoall_copies`
    for an all-to-all, ep x moe_tp (every GPU of the stage) for an all-gather and
    reduce-scatter (`gather`)."""
    per_expert = alltoall_bytes_per_token(llm, weight_precision) / llm.experts_per_token
    copies = ep * expert_tp if gather else alltoall_copies(llm.experts_per_token, ep, expert_tp)
    return copies * per_expert


def gathers_tokens(gpu: GpuSpec, stage_gpus: int) -> bool:
    """Whether the stage's dispatch and combine are an all-gather and a reduce-scatter (the
    engines' default inside one server, module docstring) rather than an all-to-all: a
    stage inside one server of at most 8 GPUs. A multi-node NVLink domain (more GPUs per
    scale-up domain: GB200 NVL72) runs TensorRT-LLM's all-to-all, a stage across servers
    DeepEP's."""
    return gpu.gpus_per_node <= 8 and stage_gpus <= gpu.gpus_per_node


def grouped_gemm_efficiency(tokens_per_expert: float, half_tokens: float) -> float:
    """Share of the large-batch GEMM rate the routed experts' grouped GEMM reaches when
    each expert multiplies `tokens_per_expert` rows: n / (n + n_half), a saturating curve
    (1 with n_half = 0; 1/2 at n = n_half; 0 with no rows). Small per-expert batches fill
    a fraction of each tensor-core tile (M tiles of 64-128 rows) and pay the per-expert
    setup and the gather/scatter of their rows; the curve is the smooth form of that."""
    if half_tokens <= 0:
        return 1.0
    if tokens_per_expert <= 0:
        return 0.0
    return tokens_per_expert / (tokens_per_expert + half_tokens)


def expert_compute_precision(gpu: GpuSpec, llm: LlmSpec, weight_precision: Precision) -> Precision:
    """Precision the routed experts' GEMMs run at: the weight precision, except that
    experts stored 4-bit (`expert_weight_precision`, GPT-OSS's MXFP4) on a GPU without
    FP4 tensor cores are dequantised in the kernel and multiplied at BF16 (W4A16:
    TensorRT-LLM's and vLLM's Hopper MXFP4 MoE runs BF16 activations)."""
    if llm.expert_weight_precision is Precision.FP4 and not gpu.supports(Precision.FP4):
        return Precision.BF16
    return weight_precision


@dataclass(frozen=True)
class ExpertLayout:
    """The per-GPU coefficients of the routed experts of one stage under a TP x DP x EP
    layout (`expert_layout`); an `imbalance` argument is the one at T, once per pass."""

    ep: int
    dp: int
    experts: int
    experts_per_token: int
    routing_skew: float
    alltoall_collectives: int
    """Dispatch and combine collectives per pass: 2 x MoE layers of the stage where tokens
    are dispatched (`tokens_dispatched`), else 0 (TP's all-reduce does the job)."""
    alltoall_latency_s: float
    alltoall_s_per_token: float
    """Seconds one of the step's tokens adds to the all-to-all of the mean GPU, all the
    stage's MoE layers: bytes per token x MoE layers / G x (G-1)/G over the links."""
    prefill_alltoall_s_per_token: float | None = None
    """The same for a prompt token, which crosses servers by the forwarding kernels
    (`models.physics.alltoall`); None: as `alltoall_s_per_token`."""
    compute_slowdown: float = 1.0
    """Linear-layer peak over the experts' peak (`expert_compute_precision`), over the
    dequantising kernel's rate where the GEMM dequantises (`dequant_rate`): 2 for W4A16
    experts beside FP8 layers on Hopper, 1 / 0.6 for them beside BF16 layers on Ampere,
    else 1."""
    gemm_half_tokens: float = 0.0
    """`MoeEfficiency.gemm_half_tokens`."""
    row_bytes: float = 0.0
    """HBM bytes one routed row (a token at one of its experts) moves on a GPU through
    the stage's MoE layers' GEMMs beside the weights (`expert_row_bytes` x MoE layers)."""
    kernel_row_bytes: float = 0.0
    """HBM bytes one routed row moves on a GPU through the memory-bound kernels between
    the GEMMs, all the stage's MoE layers (`expert_kernel_row_bytes` x MoE layers)."""

    def rows(self, tokens: float, imbalance: float | None = None) -> float:
        """Routed rows on the busiest rank: T x k / ep x imbalance."""
        f = self.imbalance(tokens) if imbalance is None else imbalance
        return tokens * self.experts_per_token / self.ep * f

    def tokens_per_expert(self, tokens: float, imbalance: float | None = None) -> float:
        """Rows each expert the busiest rank touches multiplies at `tokens` tokens: its
        T x k / ep x imbalance rows over the experts it touches (`touched_per_rank`);
        T x k / E x imbalance once every expert is touched."""
        touched = self.touched_per_rank(tokens, imbalance)
        if touched <= 0:
            return 0.0
        return self.rows(tokens, imbalance) / touched

    def routed_cost(self, tokens: float, imbalance: float | None = None) -> float:
        """Time of the routed FLOPs over their time at the linear layers' rate:
        compute_slowdown / `grouped_gemm_efficiency` of `tokens_per_expert`."""
        if tokens <= 0:
            return self.compute_slowdown
        rows = max(self.tokens_per_expert(tokens, imbalance), 1.0)  # a touched expert: a row
        return self.compute_slowdown / grouped_gemm_efficiency(rows, self.gemm_half_tokens)

    def imbalance(self, tokens: float) -> float:
        """Max-rank load over the mean at `tokens` tokens (`load_imbalance`)."""
        return load_imbalance(
            tokens, self.experts_per_token, self.ep, self.experts, self.routing_skew
        )

    def touched_per_rank(self, tokens: float, imbalance: float | None = None) -> float:
        """Experts the slowest rank reads: its share of E touched by T x imbalance tokens'
        worth of choices."""
        f = self.imbalance(tokens) if imbalance is None else imbalance
        return experts_touched_per_rank(self.experts, self.experts_per_token, self.ep, tokens * f)

    def alltoall_s(
        self, tokens: float, prefill_tokens: float = 0.0, imbalance: float | None = None
    ) -> float:
        """Dispatch and combine of `tokens` tokens, `prefill_tokens` of them prompt tokens,
        on the slowest GPU, all MoE layers of the stage: collectives x latency + imbalance
        x (decode tokens x their seconds per token + prompt tokens x theirs)."""
        if self.alltoall_collectives == 0 or tokens <= 0:
            return 0.0
        prefill_s = self.prefill_alltoall_s_per_token
        prefill_s = self.alltoall_s_per_token if prefill_s is None else prefill_s
        per_token_s = (tokens - prefill_tokens) * self.alltoall_s_per_token
        f = self.imbalance(tokens) if imbalance is None else imbalance
        volume_s = f * (per_token_s + prefill_tokens * prefill_s)
        return self.alltoall_collectives * self.alltoall_latency_s + volume_s


def fuses_gated_activation(gpu: GpuSpec, compute_precision: Precision) -> bool:
    """Whether the first expert GEMM applies the gated activation (SwiGLU) in its epilogue.
    TensorRT-LLM's grouped GEMM fuses it only on its Ampere-class kernel with 16-bit
    activations and weights (`isFusedGatedActivation`: not FP8, not the TMA
    warp-specialised kernel of Hopper and Blackwell); its TMA kernels, vLLM's and SGLang's
    fused-MoE kernels write both halves and run the activation as its own kernel. Read as:
    fused on a GPU without FP8 tensor cores multiplying BF16 experts, else not. (The
    kernel that dequantises MXFP4 experts fuses it too: `gathers_in_gemm`.)"""
    return compute_precision is Precision.BF16 and not gpu.supports(Precision.FP8)


def gathers_in_gemm(gpu: GpuSpec, llm: LlmSpec) -> bool:
    """Whether the expert GEMMs gather their rows and apply the SwiGLU themselves: the
    Triton MoE kernel that dequantises MXFP4 experts on a GPU without FP4 tensor cores
    (OpenAI's `matmul_ogs`, TensorRT-LLM's TRITON backend for GPT-OSS on Hopper, vLLM's
    there: `gather_indx` and `FusedActivation(swiglu)` in the first matmul), so neither a
    permute nor an activation kernel runs (`expert_compute_precision`'s W4A16 case)."""
    return llm.expert_weight_precision is Precision.FP4 and not gpu.supports(Precision.FP4)


def expert_row_bytes(
    llm: LlmSpec, row_precision: Precision, expert_tp: int, fused_activation: bool = True
) -> float:
    """HBM bytes the two expert GEMMs move for one routed row through one MoE layer on a GPU,
    beside the expert weights (operands the GEMMs stream while they compute): the first
    reads the gathered row (hidden x a) and writes its output, the second reads the
    activated intermediate (i x a, i = moe_intermediate / moe_tp) and writes the BF16
    output (hidden x 2), a = the bytes of the rows the GEMMs multiply (1 for FP8 or FP4
    rows, 2 for BF16: `dispatch_bytes_per_element` of `row_precision`). The first GEMM's
    output is the activated i x a when it fuses the gated activation, else both halves of
    the gate/up product in BF16 (2 i x 2):

        hidden x (a + 2) + i x a + (i x a  or  4 i).

    Fine-grained experts (Qwen3-30B-A3B: hidden 2,048, inter 768, k = 8) put these bytes
    at the GEMMs' own ridge, where they decide a prefill's time."""
    a = dispatch_bytes_per_element(row_precision)
    inter = llm.moe_intermediate_size / expert_tp
    first_output = inter * a if fused_activation else 4 * inter
    return llm.hidden_size * (a + 2) + inter * a + first_output


def expert_kernel_row_bytes(
    llm: LlmSpec,
    row_precision: Precision,
    expert_tp: int,
    fused_activation: bool = True,
    gathered_in_gemm: bool = False,
) -> float:
    """HBM bytes one routed row moves through the memory-bound kernels between a MoE
    layer's GEMMs on a GPU (their own kernels: the time adds to the GEMMs'): the permute
    reads the token's BF16 row and writes it at the rows' precision (hidden x (2 + a)),
    unless the GEMM gathers its rows itself; an unfused gated activation reads both BF16
    halves and writes the activated row (i x (4 + a)); the combine reads the BF16 expert
    output and writes its 1/k share of the token's BF16 sum (hidden x (2 + 2/k)):

        (hidden x (2 + a)  or  0) + (0  or  i x (4 + a)) + hidden x (2 + 2/k)."""
    a = dispatch_bytes_per_element(row_precision)
    inter = llm.moe_intermediate_size / expert_tp
    permute = 0.0 if gathered_in_gemm else llm.hidden_size * (2 + a)
    activation = 0.0 if fused_activation else inter * (4 + a)
    return permute + activation + llm.hidden_size * (2 + 2 / llm.experts_per_token)


def expert_layout(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    tp: int,
    ep: int,
    dp: int,
    stage_moe_layers: float,
    efficiency: Efficiency,
    alltoall_latency_s: float = ALLTOALL_LATENCY_S,
    routing_skew: float = 1.0,
    gemm_half_tokens: float = 0.0,
    dequant_half_tokens: float | None = None,
    dequant_rate: float = 1.0,
    redundant: int = 0,
) -> ExpertLayout:
    """The routed experts' coefficients of a stage with `stage_moe_layers` MoE layers; W4A16
    experts take `dequant_half_tokens` half-rate rows where given; a GEMM that dequantises its
    experts in the kernel (`gathers_in_gemm`) runs at `dequant_rate` of the dense GEMM's
    large-batch rate (`MoeEfficiency.dequant_gemm_rate`: its routed FLOPs cost 1 / rate
    more); `redundant` copies (EPLB) make E + R slots (`load_imbalance`); tokens sent to
    experts as `tokens_dispatched` says."""
    stage_gpus = tp * dp
    spans_groups = tokens_dispatched(ep, dp, alltoall_backend=efficiency.overlaps(tp, dp, ep))
    expert_tp = moe_tp(tp, dp, ep)
    gather = gathers_tokens(gpu, stage_gpus)
    per_token_bytes = alltoall_bytes_per_token_sent(llm, weight_precision, ep, expert_tp, gather)
    per_token_bytes *= stage_moe_layers
    s_per_byte = alltoall_link_s_per_byte(gpu, efficiency, stage_gpus)
    copies = alltoall_copies(llm.experts_per_token, ep, expert_tp)
    forwarded_s_per_byte = forwarded_link_s_per_copy_byte(
        gpu, efficiency, stage_gpus, copies, llm.experts_per_token
    )
    forwarded_s = per_token_bytes / copies * forwarded_s_per_byte  # bytes of one copy x s/byte
    compute_precision = expert_compute_precision(gpu, llm, weight_precision)
    expert_peak = gpu.peak_flops(compute_precision)
    in_gemm = gathers_in_gemm(gpu, llm)
    fused = in_gemm or fuses_gated_activation(gpu, compute_precision)
    rows_at = compute_precision if in_gemm else weight_precision
    slowdown = gpu.peak_flops(weight_precision) / expert_peak
    if in_gemm:
        slowdown /= dequant_rate
    if compute_precision is not weight_precision and dequant_half_tokens is not None:
        gemm_half_tokens = dequant_half_tokens
    return ExpertLayout(
        ep=ep,
        dp=dp,
        experts=llm.experts + redundant,
        experts_per_token=llm.experts_per_token,
        routing_skew=routing_skew,
        alltoall_collectives=round(2 * stage_moe_layers) if spans_groups else 0,
        alltoall_latency_s=alltoall_latency_s,
        alltoall_s_per_token=per_token_bytes / stage_gpus * s_per_byte if spans_groups else 0.0,
        prefill_alltoall_s_per_token=forwarded_s / stage_gpus
        if spans_groups and not gather
        else None,
        compute_slowdown=slowdown,
        gemm_half_tokens=gemm_half_tokens,
        row_bytes=expert_row_bytes(llm, rows_at, expert_tp, fused) * stage_moe_layers,
        kernel_row_bytes=expert_kernel_row_bytes(llm, rows_at, expert_tp, fused, in_gemm)
        * stage_moe_layers,
    )
