"""Two-batch overlap: an expert-parallel pass run as two micro-batches, one's all-to-all in
flight while the other computes, as SGLang (`--enable-two-batch-overlap`) and DeepSeek's
inference system run it (vLLM's dual-batch overlap, `--enable-dbo`, the same idea).

Each micro-batch carries half the pass's tokens through every layer. A layer's work on
one micro-batch is, in the engines' order, the attention side a (the attention, the
non-routed linear layers, the shared experts and the router), the dispatch d, the routed
experts e and the combine c. The compute stream runs the two micro-batches' stages in
turn, and a stage that needs a collective's result waits for it, so a collective hides
behind the other micro-batch's stage that runs while it is in flight. SGLang's operation
lists (python/sglang/srt/operations_strategy.py, `_compute_moe_deepseek_blog_prefill` and
`_compute_moe_deepseek_blog_decode`) fix which stage that is:

- Decode (`tbo_delta_stages=2`: the second micro-batch runs two of five stages behind,
  DeepSeek's five-stage pipeline with the attention split in two). One micro-batch's
  dispatch and combine are in flight while the other runs its attention (and its own
  shared experts); its routed experts wait for its own dispatch and hide nothing. Per
  layer, with the all-to-all m = d + c,

      pass = 2 x (e + max(a, m))

  DeepEP's low-latency kernels hold no SMs while their messages are in flight (DeepSeek's
  profile-data README: 'after RDMA messages are issued, all GPU SMs are freed'), so the
  compute runs at its own rate beside them.
- Prefill (`tbo_delta_stages=0`: the two micro-batches alternate stage by stage: a, then
  e). The first micro-batch's dispatch is in flight over the second's attention side,
  its combine over the second's experts; the second's dispatch over the first's experts,
  its combine over the first's next attention side:

      pass = max(a, d) + max(e, d) + max(e, c) + max(a, c)

Both are 2 (a + e) when the all-to-all is short and 2 m when it is long, and they pay
what splitting costs: each micro-batch reads the weights again, runs its grouped GEMM at
half the rows per expert and pays its own collectives' latency (the terms a, e, d and c
are one micro-batch's, `models.physics.step_passes.StepModel._micro_batch_terms`). The
dispatch's share of the all-to-all is its share of the bytes (FP8 dispatch, BF16 combine:
1 / 3), latency included.

In prefill the compute shares the GPU with the communication: DeepEP's normal kernels
hold `DEEPEP_NORMAL_KERNEL_SMS` SMs while they run, and SGLang gives DeepGEMM the rest
(`_compute_moe_deepseek_blog_prefill`: deep_gemm_num_sms = multi_processor_count -
DeepEPConfig.num_sms), so a micro-batch's compute-bound kernels run at (S - 20) / S of
their rate (112 of an H100's 132 SMs: 0.848; `overlap_compute_share`, on the GPU's
`sm_count`; memory-bound kernels keep their bandwidth). The blog's breakdown says as much
('the no-TBO 8k case outperforms the TBO 16k case in per-kernel speed ... reduced
streaming multiprocessors (SMs) with TBO'). Decode's low-latency kernels free theirs.

And the communication runs slower beside the compute than alone: the blog's prefill
breakdown ('Both DeepSeek and SGLang have a communication time slower than unit test
results, while the latter is achievable when disabling TBO') and its decode one ('Unlike
prefill, decode communication kernels either fully utilize SMs ... or none ..., avoiding
resource contention with computation kernels'). Neither prints the durations (they are
in a figure), but the blog's prefill ablation prints what the overlap buys: 'a 27% to 35%
throughput increase compared to the vanilla setup, even when processing the same token
count per device'. With the all-to-all at its unit-test speed beside the compute the
model's overlap buys 59% there (8,192 tokens a GPU, SGLang's DP32 x EP32 at 1K, 2K and 4K
prompts): it hides what the runs do not. An overlapped prefill's all-to-all is charged
`OVERLAPPED_NORMAL_COMM_STRETCH` = 1.4 times its time alone, the stretch at which the
model's gain at the same token count reads 30%, 31% and 33% (1.3: 36-38%, above the
band; 1.5: 23-27%), inside the ablation's 27-35%. It is read from the ablation, a ratio
of the same deployment's runs, not from the held-out throughputs (`calibration/data/
README.md`, wide_ep.csv); the mechanism behind it (the normal kernels' SMs, HBM and
the compute's kernels contending) is named, not modelled part by part.

Which engine runs it, and where (`engine_runs_overlap`; `Efficiency.overlap_engine` names
the engine profile's, and every output times and deploys through `Efficiency.overlaps`).
In fleetplan's terms a stage holds tp x dp GPUs (dp attention groups of tp) and `ep`
expert ranks:

- vLLM (`--enable-dbo`): attention DP above 1 and EP above 1. docs/design/dbo.md: 'This
  must be run in conjunction with `--data-parallel-size N` where N is greater than 1 and
  `--enable-expert-parallel`'; vllm/v1/worker/dp_utils.py `coordinate_batch_across_dp`
  returns no micro-batching at `data_parallel_size == 1` ('Early exit'), so an engine
  started with the switch at DP 1 runs every pass whole (and `ParallelConfig.use_all2all`,
  vllm/config/parallel.py, needs DP above 1: at DP 1 its experts exchange no all-to-all).
  vllm/config/vllm.py refuses the switch on any all-to-all backend but DeepEP's.
- SGLang (`--enable-two-batch-overlap`): EP above 1 over every GPU of the stage, ep =
  tp x dp. python/sglang/srt/server_args.py refuses the switch while `--moe-a2a-backend`
  is 'none' ('When enabling two batch overlap, moe_a2a_backend cannot be 'none''), and
  DeepEP's backend sets the EP size to SGLang's TP size, every GPU of the stage
  (`_handle_a2a_moe`: 'The expert parallel size is adjusted to be the same as the tensor
  parallel size'), so a layout whose experts are also split by TP (ep < tp x dp) does
  not run as planned with it. DP attention is not needed: sgl-project/sglang#6634
  ('Support TP in attention for two batch overlap', merged May 2025), and with an
  all-to-all backend the scheduler prepares every batch for the split whether or not
  `--enable-dp-attention` is set (`require_mlp_sync` via `require_attn_tp_gather`).
- TensorRT-LLM: none. `trtllm-serve serve`'s options and the LlmArgs fields hold no
  two-batch overlap (solver/deploy/references/trtllm.yaml), so a TensorRT-LLM profile
  runs every pass whole.
- No engine named (an `Efficiency` built by hand): any layout at EP above 1.
"""

from dataclasses import fields

from models.physics.pass_parts import PassParts

DEEPEP_NORMAL_KERNEL_SMS = 20
"""SMs DeepEP's normal (prefill) dispatch and combine hold: deep_ep/buffer.py `Buffer.num_sms
= 20`, which SGLang's DeepEP configuration keeps unless `--deepep-config` sets another."""

OVERLAPPED_NORMAL_COMM_STRETCH = 1.4
"""An overlapped prefill's all-to-all over its time alone (module docstring): the value
at which the model's prefill two-batch-overlap gain at equal tokens a GPU lies inside the
lm-sys blog's (2025-05-05, Ablation Study: Two-batch Overlap) 27% to 35%."""

COMPUTE_TERMS = frozenset(
    {"linear_compute_s", "attention_compute_s", "prefill_attention_s", "expert_compute_s"}
)
"""`PassParts` terms timed at a FLOP rate: the ones fewer SMs slow."""


def overlap_compute_share(sm_count: int | None) -> float:
    """Share of its SMs a GPU's compute keeps beside DeepEP's normal kernels:
    (S - 20) / S (112 / 132 on an H100); 1 where the SM count is not stated."""
    if sm_count is None or sm_count <= DEEPEP_NORMAL_KERNEL_SMS:
        return 1.0
    return (sm_count - DEEPEP_NORMAL_KERNEL_SMS) / sm_count


def on_shared_sms(terms: tuple[float, ...], share: float) -> tuple[float, ...]:
    """`PassParts` terms (its fields in order) with the compute-bound ones at `share` of
    their rate: each over `share`; the memory and communication terms as they are."""
    names = [field.name for field in fields(PassParts)]
    return tuple(
        term / share if name in COMPUTE_TERMS else term
        for name, term in zip(names, terms, strict=True)
    )


def overlapped_pass_s(
    attention_side_s: float,
    expert_s: float,
    alltoall_s: float,
    dispatch_share: float,
    prefill: bool,
) -> float:
    """One pass of two overlapped micro-batches (module docstring), from one micro-batch's
    attention side a, routed experts e and all-to-all m (dispatch d = `dispatch_share` x
    m, combine c = m - d): decode 2 (e + max(a, m)); a pass with prompt tokens (`prefill`)
    max(a, d) + max(e, d) + max(e, c) + max(a, c)."""
    if not prefill:
        return 2.0 * (expert_s + max(attention_side_s, alltoall_s))
    dispatch_s = dispatch_share * alltoall_s
    combine_s = alltoall_s - dispatch_s
    return (
        max(attention_side_s, dispatch_s)
        + max(expert_s, dispatch_s)
        + max(expert_s, combine_s)
        + max(attention_side_s, combine_s)
    )


OVERLAP_CONDITIONS = {
    "vllm": "vLLM's DBO runs only with attention DP and EP both above 1 "
    "(--data-parallel-size above 1 with --enable-expert-parallel)",
    "sglang": "SGLang's TBO runs on DeepEP, whose EP size is every GPU of the replica: "
    "EP above 1 and equal to TP x attention DP",
    "trtllm": "TensorRT-LLM has no two-batch overlap",
}
"""What each engine's two-batch overlap asks of a layout (module docstring), in words."""
ANY_ENGINE_CONDITION = "the overlap needs an experts' all-to-all: EP above 1"
"""`overlap_condition` where no engine is named."""


def engine_runs_overlap(engine: str | None, tp: int, dp: int, ep: int) -> bool:
    """Whether `engine` (`vllm`, `sglang`, `trtllm`; None: none named) runs a stage of
    dp attention groups of tp GPUs and `ep` expert ranks as two overlapped micro-batches
    (module docstring): vLLM at dp > 1 and ep > 1, SGLang at ep = tp x dp > 1, TensorRT-LLM
    never, no engine at ep > 1."""
    if ep <= 1:
        return False
    if engine == "vllm":
        return dp > 1
    if engine == "sglang":
        return ep == tp * dp
    return engine != "trtllm"


VLLM_DBO_TOKEN_FLOORS = (32, 512)
"""vLLM's defaults for the tokens a DP rank's batch needs before DBO splits it:
`--dbo-decode-token-threshold` 32 for a decode-only batch, `--dbo-prefill-token-threshold`
512 for one with prompt tokens (vllm/config/parallel.py, ParallelConfig
dbo_decode_token_threshold and dbo_prefill_token_threshold;
vllm/v1/worker/ubatch_utils.py check_ubatch_thresholds: num_tokens >= the threshold).
Below them the batch runs whole: the split's second weight read costs more than the
all-to-all it hides."""
MIN_SPLIT_DECODE_TOKENS = 2
"""A decode batch of one sequence per rank has no two micro-batches to make: every
engine runs it whole."""


def overlap_token_floors(engine: str | None) -> tuple[int, int]:
    """The tokens per attention-DP rank a pass needs before `engine` splits it into two
    micro-batches, (decode-only, with prompt tokens): vLLM's thresholds
    (`VLLM_DBO_TOKEN_FLOORS`); other engines split any pass that has two sequences'
    tokens to split (`MIN_SPLIT_DECODE_TOKENS`; SGLang's TBO splits a prompt by tokens)."""
    if engine == "vllm":
        return VLLM_DBO_TOKEN_FLOORS
    return (MIN_SPLIT_DECODE_TOKENS, 0)


def overlap_condition(engine: str | None) -> str:
    """`engine`'s condition for the overlap in words (`OVERLAP_CONDITIONS`)."""
    return OVERLAP_CONDITIONS.get(engine or "", ANY_ENGINE_CONDITION)
