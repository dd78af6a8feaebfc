"""Two-batch overlap: an expert-parallel pass run as two micro-batches, one's all-to-all in
flight while the other computes, as SGLang (`--enable-two-batch-overlap`) and DeepSeek's
inference system run it (vLLM's dual-batch overlap, `--enable-dbo`, the same idea); and,
last, which expert layouts each engine runs at all (`engine_layout_problem`).

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

## Which layouts each engine runs (`engine_layout_problem`)

`models.physics.memory.expert_layout_problem` holds the rule every layout obeys: a stage
of dp attention groups of tp GPUs, its routed experts split over the tp x dp GPUs as
`ep` ranks (ep dividing tp x dp), each expert split by TP over tp x dp / ep GPUs. The
engines run only part of that grid; a layout outside an engine's part is started by the
engine as another layout, so a plan timed at it and a script written for it disagree
with what runs. In fleetplan's terms (a stage of tp x dp GPUs, `ep` expert ranks):

- vLLM: EP 1 or EP = TP x DP. vllm/model_executor/layers/fused_moe/config.py
  `FusedMoEParallelConfig.make` flattens TP across DP for the experts (`flatten_tp_across_dp`:
  tp_size x dp_size GPUs) and then either shards every expert over all of them (no
  `--enable-expert-parallel`: ep_size 1) or, with the switch, makes each of them an expert
  rank ('ep_size = tp_size', tp_size 1 after the flattening). No flag sets an EP between:
  a plan at TP8 x EP4 is launched with `--enable-expert-parallel` and runs as EP8.
- SGLang: every EP dividing TP x DP. Its TP size is the stage's GPUs (the attention groups
  split it: `--tp-size 8 --dp-size 8 --enable-dp-attention`), `--ep-size` sets the expert
  ranks and python/sglang/srt/distributed/parallel_state.py `initialize_model_parallel`
  splits the rest of the TP group over each expert (moe_tp_size = tensor_model_parallel_size
  // moe_ep_size); docs/advanced_features/expert_parallelism.md: 'For hybrid EP and TP
  (i.e., ep_size < tp_size), only the none backend (All-Reduce or All-Gather-based
  dispatching) is supported', the default. DeepEP (`--moe-a2a-backend deepep`) sets the EP
  size to the TP size (server_args.py `_handle_a2a_moe`); deploy writes it only with
  two-batch overlap, which `engine_runs_overlap` allows at EP = TP x DP alone.
- TensorRT-LLM: attention DP only at TP 1. Its `tensor_parallel_size` is the stage's GPUs,
  `moe_expert_parallel_size` x `moe_tensor_parallel_size` must equal it (tensorrt_llm/
  mapping.py: 'tp_size must equal to moe_tp_size * moe_ep_size'; any divisor runs), and
  `enable_attention_dp` runs the attention unsplit on every one of those GPUs
  (tensorrt_llm/_torch/modules/attention.py `Attention.__init__`: 'if
  self.mapping.enable_attention_dp: dp_size = tp_size; tp_size = 1'; its KV cache the same,
  _torch/pyexecutor/resource_manager.py;
  docs/source/features/parallel-strategy.md: attention is TP or DP). No option gives
  attention groups of several GPUs, so TP2 x attention DP4, launched as `--tp_size 8` with
  attention DP, runs its attention at TP1 x DP8.
- No engine named (factors built by hand): the grid as the memory rule allows it.
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


LAYOUT_RULES = {
    "vllm": "vLLM splits the experts of a stage either by TP over all its TP x DP GPUs (EP 1) "
    "or, with --enable-expert-parallel, over all of them as expert ranks (EP = TP x DP)",
    "sglang": "SGLang runs every EP that divides TP x DP (the rest of the TP group splits "
    "each expert)",
    "trtllm": "TensorRT-LLM's attention DP runs the attention unsplit on every GPU of the "
    "stage (enable_attention_dp), so attention DP above 1 needs TP 1",
}
"""Each engine's layout rule in words (module docstring)."""


def engine_layout_problem(engine: str | None, tp: int, dp: int, ep: int) -> str | None:
    """Why `engine` (`vllm`, `sglang`, `trtllm`; None: none named) does not run a stage of
    dp attention groups of tp GPUs with `ep` expert ranks as laid out, saying what it
    runs instead, or None where it does (module docstring). The memory rule
    (`expert_layout_problem`: ep divides tp x dp) is checked apart."""
    gpus = tp * dp
    if engine == "vllm" and ep not in (1, gpus):
        return (
            f"{LAYOUT_RULES['vllm']}: EP{ep} would run as EP{gpus} "
            "(vllm/model_executor/layers/fused_moe/config.py "
            "FusedMoEParallelConfig.make)"
        )
    if engine == "trtllm" and dp > 1 and tp > 1:
        return (
            f"{LAYOUT_RULES['trtllm']}: TP{tp} x attention DP{dp} would run as "
            f"TP1 x attention DP{gpus} (tensorrt_llm/_torch/modules/attention.py)"
        )
    return None


def engine_runs_layout(engine: str | None, tp: int, dp: int, ep: int) -> bool:
    """Whether `engine` runs the layout as laid out (`engine_layout_problem` is None)."""
    return engine_layout_problem(engine, tp, dp, ep) is None


def grid_layouts(tps: list[int], dps: list[int], eps: list[int]) -> list[tuple[int, int, int]]:
    """The (tp, dp, ep) layouts of a policy grid (TP `tps` x DP `dps` x EP `eps`) that the
    memory rule places (ep dividing tp x dp), each once."""
    return [
        (tp, dp, ep) for tp in set(tps) for dp in set(dps) for ep in set(eps) if (tp * dp) % ep == 0
    ]


def runnable_layouts(
    engine: str | None, tps: list[int], dps: list[int], eps: list[int]
) -> list[tuple[int, int, int]]:
    """The layouts of the grid (`grid_layouts`) that `engine` runs as laid out."""
    return [layout for layout in grid_layouts(tps, dps, eps) if engine_runs_layout(engine, *layout)]


def unrunnable_values(
    engine: str | None, tps: list[int], dps: list[int], eps: list[int]
) -> dict[str, list[int]]:
    """The attention-DP and EP values of a policy grid (TP `tps` x DP `dps` x EP `eps`)
    that the memory rule places in some layout (ep dividing tp x dp) but `engine` runs in
    none: {'attention_data_parallel': [...], 'expert_parallel': [...]}, each sorted; a
    value the memory rule already places nowhere is not `engine`'s to report."""
    grid = grid_layouts(tps, dps, eps)
    runs = [layout for layout in grid if engine_runs_layout(engine, *layout)]
    return {
        "attention_data_parallel": sorted({dp for _, dp, _ in grid} - {dp for _, dp, _ in runs}),
        "expert_parallel": sorted({ep for _, _, ep in grid} - {ep for _, _, ep in runs}),
    }
