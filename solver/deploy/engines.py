"""Engine launch arguments that reproduce a pool's planned configuration.

One function per engine, each returning the command line as a list of words (and, for
TensorRT-LLM, the `--extra_llm_api_options` YAML beside it). The flags are those of the
versions named in solver/deploy/references/*.yaml; tests/solver/deploy checks every flag
written against them.

Mapping (one replica of a pool, `solver.deploy.pools.DeployPool`), vLLM / SGLang /
TensorRT-LLM:
- weights fp8 (fp4): `--quantization fp8` (`modelopt_fp4`) in vLLM and SGLang; bf16:
  `--dtype bfloat16`; TensorRT-LLM reads the precision from the checkpoint.
- KV fp8: `--kv-cache-dtype fp8` / `fp8_e4m3` / `kv_cache_config.dtype: fp8`.
- TP, PP, DP, EP: `--tensor-parallel-size --pipeline-parallel-size --data-parallel-size
  --enable-expert-parallel` / `--tp-size --pp-size --dp-size --enable-dp-attention
  --ep-size` / `--tp_size --pp_size --ep_size` with `enable_attention_dp`. vLLM's TP size
  is one attention group's (each DP rank its own engine: DEP8 is `--tensor-parallel-size
  1 --data-parallel-size 8`); SGLang's and TensorRT-LLM's is the replica's GPUs, which
  attention DP splits into groups (`--tp-size 8 --dp-size 8 --enable-dp-attention`:
  python/sglang/srt/server_args.py `_handle_data_parallelism` asserts tp_size % dp_size
  == 0; `--tp_size 8 --ep_size 8` with `enable_attention_dp: true`, TensorRT-LLM's
  examples/serve/deepseek_r1_reasoning_parser.sh), so both get tp x dp
  (`_stage_tp`). SGLang also divides `--chunked-prefill-size` by the DP size under DP
  attention (the same function), so it gets each group's chunk times dp.
- redundant experts (EPLB): `--enable-eplb --eplb-config '{"num_redundant_experts": R}'`
  / `--ep-num-redundant-experts R --enable-eplb` / `moe_config.load_balancer` with
  `num_slots` (routed + R) and `layer_updates_per_iter: 1` (online EPLB).
- two-batch overlap, where the plan timed it (`DeployPool.two_batch_overlap`) and the
  target runs it at the pool's layout (`models.physics.overlap.engine_runs_overlap`: vLLM
  at attention DP and EP above 1, SGLang at EP = TP x DP above 1, TensorRT-LLM never):
  vLLM `--enable-dbo` with `--all2all-backend deepep_high_throughput` (a prefill pool) or
  `deepep_low_latency` (vllm/engine/arg_utils.py registers both; its docs/design/dbo.md:
  DBO overlaps the MoE all-to-all, run with `--data-parallel-size` above 1,
  `--enable-expert-parallel` and DeepEP's kernels, the default allgather_reducescatter is
  refused) / `--enable-two-batch-overlap` with `--moe-a2a-backend deepep`
  (python/sglang/srt/server_args.py: 'When enabling two batch overlap, moe_a2a_backend
  cannot be 'none'') / none: TensorRT-LLM's serve options and LlmArgs hold no such
  switch. Where the plan timed it and the target cannot run it, the script (TensorRT-LLM:
  its options file) opens with a comment saying so (`overlap_notes`).
- layout: a pool whose TP x DP x EP the target does not run as laid out
  (`models.physics.overlap.engine_layout_problem`: vLLM at EP 1 or TP x DP alone,
  TensorRT-LLM's attention DP at TP 1 alone; a hand-written plan, or one made on another
  engine's profile) is refused
  (`layout_problems`): vLLM given `--enable-expert-parallel` for TP8 x EP4 starts EP8, and
  TensorRT-LLM given `--tp_size 8` with attention DP for TP2 x DP4 starts TP1 x DP8, so the
  script would run a layout the plan never timed. The manifests (k8s, llm-d, Dynamo) launch
  vLLM (`MANIFEST_ENGINE`).
- batch cap: `--max-num-seqs` / `--max-running-requests` / `--max_batch_size`.
- memory split (`DeployPool.memory_reserve_fraction`, `kv_free_fraction`):
  `--gpu-memory-utilization` / `--mem-fraction-static` (1 - the reserve) /
  `kv_cache_config.free_gpu_memory_fraction`.
- tokens per iteration and chunk: `--max-num-batched-tokens --enable-chunked-prefill` /
  `--chunked-prefill-size --max-prefill-tokens` / `--max_num_tokens
  --enable_chunked_prefill`.
- prefix cache and host/SSD KV tiers: `--enable-prefix-caching` and the LMCache connector
  / the radix cache with `--enable-hierarchical-cache` (`--hicache-storage-backend file`
  for SSD) / `kv_cache_config.enable_block_reuse`.
- speculation: `--speculative-config` / `--speculative-algorithm ...` /
  `speculative_config`.
- prefill/decode pair: `--kv-transfer-config` with NixlConnector / `--disaggregation-mode
  --disaggregation-transfer-backend nixl` / `--server_role` with
  `cache_transceiver_config.backend: NIXL`.
"""

import json
import math

from models.physics.overlap import engine_layout_problem, engine_runs_overlap, overlap_condition
from solver.deploy.pools import DeployPool

ENGINES = ("vllm", "sglang", "trtllm")
"""The engines `engine_command` writes."""

MANIFEST_ENGINE = "vllm"
"""The engine the k8s, llm-d and Dynamo manifests launch (`solver.deploy.manifests` writes
`vllm_command`)."""

_QUANTIZATION = {"fp8": "fp8", "fp4": "modelopt_fp4"}
"""Weight precision -> the engine's online quantization method (bf16: none)."""


def _draft_method(pool: DeployPool) -> str:
    """vLLM's speculative method: a named draft model runs as `draft_model`, a drafter
    given by its cost is EAGLE heads (`eagle3`)."""
    assert pool.speculative is not None
    return "draft_model" if pool.speculative.draft_model else "eagle3"


def vllm_command(pool: DeployPool) -> list[str]:
    """`vllm serve MODEL ...` for one replica of `pool`."""
    args = ["vllm", "serve", pool.model, "--served-model-name", pool.model]
    args += _precision(pool, fp8_kv="fp8")
    args += ["--tensor-parallel-size", str(pool.tp), "--pipeline-parallel-size", str(pool.pp)]
    if pool.dp > 1:
        args += ["--data-parallel-size", str(pool.dp)]
    if pool.ep > 1:
        args += ["--enable-expert-parallel"]
    if pool.redundant_experts:  # EPLBConfig.num_redundant_experts
        eplb = json.dumps({"num_redundant_experts": pool.redundant_experts})
        args += ["--enable-eplb", "--eplb-config", eplb]
    if _runs_overlap("vllm", pool):  # DeepEP's throughput kernels for prompts, latency for decode
        kernels = "deepep_high_throughput" if pool.role == "prefill" else "deepep_low_latency"
        args += ["--enable-dbo", "--all2all-backend", kernels]
    if pool.multi_node:  # the replica's nodes joined by Ray (the LeaderWorkerSet's group)
        args += ["--distributed-executor-backend", "ray"]
    args += [
        "--max-num-seqs",
        str(pool.max_batch),
        "--max-num-batched-tokens",
        str(pool.tokens_per_iteration),
        "--enable-chunked-prefill",
        "--max-model-len",
        str(pool.max_context_tokens),
        "--gpu-memory-utilization",
        _fraction(1.0 - pool.memory_reserve_fraction),
    ]
    args += ["--enable-prefix-caching" if pool.prefix_caching else "--no-enable-prefix-caching"]
    if pool.speculative is not None:
        spec = {"method": _draft_method(pool), "num_speculative_tokens": pool.speculative.tokens}
        if pool.speculative.draft_model:
            spec["model"] = pool.speculative.draft_model
        args += ["--speculative-config", json.dumps(spec, sort_keys=True)]
    transfer = _vllm_kv_transfer(pool)
    if transfer is not None:
        args += ["--kv-transfer-config", json.dumps(transfer, sort_keys=True)]
    return args


def _vllm_kv_transfer(pool: DeployPool) -> dict | None:
    """NIXL between a prefill and a decode pool; LMCache for host or SSD KV tiers."""
    if pool.role != "unified":
        return {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    if set(pool.kv_tiers) - {"hbm"}:
        return {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
    return None


def _fraction(share: float) -> str:
    """A memory share as an engine flag reads it: 4 decimals, rounded down, so the engine
    never takes more of the GPU than the plan left to it."""
    return f"{math.floor(share * 10_000) / 10_000:.4f}".rstrip("0").rstrip(".")


def _precision(pool: DeployPool, fp8_kv: str) -> list[str]:
    args = []
    if pool.precision in _QUANTIZATION:
        args += ["--quantization", _QUANTIZATION[pool.precision]]
    else:
        args += ["--dtype", "bfloat16"]
    args += ["--kv-cache-dtype", fp8_kv if pool.kv_precision == "fp8" else "auto"]
    return args


def _stage_tp(pool: DeployPool) -> int:
    """SGLang's and TensorRT-LLM's TP size: every GPU of a stage, tp x dp (attention DP
    splits them into dp groups of tp; vLLM's is one group's, tp)."""
    return pool.tp * pool.dp


def sglang_command(pool: DeployPool) -> list[str]:
    """`python -m sglang.launch_server ...` for one replica of `pool`."""
    args = ["python", "-m", "sglang.launch_server", "--model-path", pool.model]
    args += ["--served-model-name", pool.model, "--context-length", str(pool.max_context_tokens)]
    args += _precision(pool, fp8_kv="fp8_e4m3")
    args += ["--tp-size", str(_stage_tp(pool)), "--pp-size", str(pool.pp)]
    if pool.dp > 1:
        args += ["--dp-size", str(pool.dp), "--enable-dp-attention"]
    if pool.ep > 1:
        args += ["--ep-size", str(pool.ep)]
    if pool.redundant_experts:  # EPLB rebalances the copies onto the hottest experts
        args += ["--ep-num-redundant-experts", str(pool.redundant_experts), "--enable-eplb"]
    if _runs_overlap("sglang", pool):  # TBO needs an all-to-all backend other than 'none'
        args += ["--enable-two-batch-overlap", "--moe-a2a-backend", "deepep"]
    args += [
        "--max-running-requests",
        str(pool.max_batch),
        "--chunked-prefill-size",  # SGLang gives each DP attention group 1/dp of it
        str(pool.chunked_prefill_tokens * pool.dp),
        "--max-prefill-tokens",
        str(pool.tokens_per_iteration),
        "--mem-fraction-static",
        _fraction(1.0 - pool.memory_reserve_fraction),
    ]
    if not pool.prefix_caching:
        args += ["--disable-radix-cache"]
    elif set(pool.kv_tiers) - {"hbm"}:
        args += ["--enable-hierarchical-cache"]
        if "ssd" in pool.kv_tiers:
            args += ["--hicache-storage-backend", "file"]
    if pool.speculative is not None:
        draft = pool.speculative.draft_model
        args += ["--speculative-algorithm", "STANDALONE" if draft else "EAGLE3"]
        if draft:
            args += ["--speculative-draft-model-path", draft]
        args += [
            "--speculative-num-steps",
            str(pool.speculative.tokens),
            "--speculative-num-draft-tokens",
            str(pool.speculative.tokens + 1),
        ]
    if pool.role != "unified":
        args += ["--disaggregation-mode", pool.role, "--disaggregation-transfer-backend", "nixl"]
    return args


TRTLLM_OPTIONS_FILE = "extra-llm-api-options.yaml"
"""The name `trtllm_command` gives its `--extra_llm_api_options` file (one per pool,
`<pool>.extra-llm-api-options.yaml` when written to a folder)."""


def trtllm_command(pool: DeployPool, options_file: str = TRTLLM_OPTIONS_FILE) -> list[str]:
    """`trtllm-serve serve MODEL ...` for one replica of `pool` (with `trtllm_options`)."""
    args = ["trtllm-serve", "serve", pool.model, "--backend", "pytorch"]
    args += ["--tp_size", str(_stage_tp(pool)), "--pp_size", str(pool.pp)]
    if pool.ep > 1:
        args += ["--ep_size", str(pool.ep)]
    args += [
        "--max_batch_size",
        str(pool.max_batch),
        "--max_num_tokens",
        str(pool.tokens_per_iteration),
        "--max_seq_len",
        str(pool.max_context_tokens),
        "--enable_chunked_prefill",
    ]
    if pool.role != "unified":
        args += ["--server_role", "CONTEXT" if pool.role == "prefill" else "GENERATION"]
    return [*args, "--extra_llm_api_options", options_file]


TRTLLM_NO_OVERLAP = (
    "# The plan timed this pool with two-batch overlap (efficiency.two_batch_overlap: two"
    " micro-batches, one's MoE all-to-all under the other's compute); TensorRT-LLM has no"
    " switch for it, so this engine runs the passes whole and slower than planned."
)
"""The comment line heading a TensorRT-LLM options file of a pool the plan overlapped
(`trtllm_notes`): `trtllm-serve serve`'s options and the LlmArgs fields hold no two-batch
overlap, and saying nothing would leave the plan's capacity unexplained."""


def _runs_overlap(engine: str, pool: DeployPool) -> bool:
    """Whether `engine` is launched with its overlap switch: the plan timed the pool with
    the overlap and the engine runs it at the pool's layout."""
    return pool.two_batch_overlap and engine_runs_overlap(engine, pool.tp, pool.dp, pool.ep)


def overlap_notes(engine: str, pool: DeployPool) -> list[str]:
    """Comment lines for the top of `pool`'s `engine` script (TensorRT-LLM: its options
    file) where the plan timed the pool with two-batch overlap and `engine` does not run it
    at the pool's layout (a plan made on another engine's profile): the engine runs each
    pass whole and slower than the plan assumed."""
    if not pool.two_batch_overlap or _runs_overlap(engine, pool):
        return []
    if engine == "trtllm":
        return [TRTLLM_NO_OVERLAP]
    return [
        "# The plan timed this pool with two-batch overlap (efficiency.two_batch_overlap);"
        f" {overlap_condition(engine)}, and this pool is TP{pool.tp} x DP{pool.dp} x"
        f" EP{pool.ep}: no switch is written, so this engine runs the passes whole and"
        " slower than planned."
    ]


def trtllm_notes(pool: DeployPool) -> list[str]:
    """Comment lines for the top of `pool`'s `--extra_llm_api_options` file: what the
    plan assumed that TensorRT-LLM has no option for (`overlap_notes`)."""
    return overlap_notes("trtllm", pool)


def trtllm_options(pool: DeployPool) -> dict:
    """The `--extra_llm_api_options` YAML of `pool` (LlmArgs fields)."""
    kv: dict = {"dtype": "fp8" if pool.kv_precision == "fp8" else "auto"}
    kv["enable_block_reuse"] = pool.prefix_caching
    kv["free_gpu_memory_fraction"] = float(_fraction(pool.kv_free_fraction))
    options: dict = {"kv_cache_config": kv}
    if pool.dp > 1:
        options["enable_attention_dp"] = True
    if pool.redundant_experts:  # online EPLB over routed + redundant slots
        balancer = {"num_slots": pool.expert_slots, "layer_updates_per_iter": 1}
        options["moe_config"] = {"load_balancer": balancer}
    if pool.speculative is not None:
        spec: dict = {
            "decoding_type": "Eagle" if not pool.speculative.draft_model else "Draft_Target",
            "max_draft_len": pool.speculative.tokens,
        }
        if pool.speculative.draft_model:
            spec["speculative_model"] = pool.speculative.draft_model
        options["speculative_config"] = spec
    if pool.role != "unified":
        options["cache_transceiver_config"] = {"backend": "NIXL"}
    return options


def engine_command(engine: str, pool: DeployPool) -> list[str]:
    """The launch command of `engine` (one of `ENGINES`) for one replica of `pool`."""
    return {"vllm": vllm_command, "sglang": sglang_command, "trtllm": trtllm_command}[engine](pool)


def layout_problems(engine: str, pools: tuple[DeployPool, ...]) -> list[str]:
    """One line per pool of `pools` whose layout `engine` (one of `ENGINES`) does not run
    as laid out (`models.physics.overlap.engine_layout_problem`), naming the pool,
    its layout and what the engine would start instead; empty where every pool runs."""
    return [
        f"pool {pool.name} (TP{pool.tp} x DP{pool.dp} x EP{pool.ep}): {problem}; deploy it "
        "to an engine that runs it, or plan it again with that engine's profile (engine:)"
        for pool in pools
        if (problem := engine_layout_problem(engine, pool.tp, pool.dp, pool.ep)) is not None
    ]
