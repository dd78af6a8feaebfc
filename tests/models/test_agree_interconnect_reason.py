"""An `interconnect` limit names the links that set the pace: under expert parallelism
the step's communication is the experts' all-to-all (dispatch and combine), not an
all-reduce. DeepSeek-V3's decode at DP32 x EP32 on 4 H100 servers spent 58% of its pass
in the all-to-all and read 'all-reduces and hops take 58% of each stage pass (0
all-reduces per pass)', in perf and the plan's limit column alike."""

import yaml

from models.io.loading import validate_instance
from models.physics.catalog import llm_catalog
from models.physics.pass_parts import PassParts
from models.serving.capacity_reasons import comm_share_reason
from solver.candidates.table import build_candidates

WIDE = """
name: wide
gpus: [{name: h100-sxm}]
models: [{name: deepseek-v3, weight_precisions: [fp8]}]
regions:
  - {name: us-east, supply: {h100-sxm: {max_gpus: 512, price_per_gpu_hour: 2.4}}}
workloads:
  - name: chat
    model: deepseek-v3
    demand: {us-east: {peak_requests_per_s: 40}}
    prompt_tokens: {mean: 2000, p99: 2000}
    output_tokens: {mean: 500, p99: 500}
    slo: {ttft_p99_ms: 3000, tpot_p99_ms: 100}
policy:
  tensor_parallel: [1]
  expert_parallel: [32]
  attention_data_parallel: [32]
  disaggregation: true
"""


def test_a_wide_expert_parallel_decode_names_its_all_to_all():
    dsv3 = llm_catalog()["deepseek-v3"]
    moe_layers = dsv3.layers - dsv3.first_dense_layers  # 61 - 3 = 58
    table = build_candidates(validate_instance(yaml.safe_load(WIDE), "wide.yaml"))
    (decode,) = [c for c in table.of("chat") if c.role.value == "decode"]
    assert decode.limit.value == "interconnect"
    said = decode.capacity.reason
    assert decode.config.gpus == 32  # DP32 x EP32 at TP1: 4 servers
    assert said.startswith("the experts' all-to-all, all-reduces and hops take ")
    assert f"({2 * moe_layers} expert all-to-alls and 0 all-reduces per pass)" in said


def test_without_an_all_to_all_the_reason_reads_as_before():
    # linear max(1.0 s FLOPs, 0.5 s weights) = 1.0 s, no attention, 1.5 s of links:
    # 1.5 / (1.0 + 1.5) = 60% of the pass
    parts = PassParts(
        linear_compute_s=1.0,
        weight_read_s=0.5,
        attention_compute_s=0.0,
        kv_read_s=0.0,
        prefill_attention_s=0.0,
        comm_s=1.5,
    )
    assert comm_share_reason(parts, 160, 12.0, None) == (
        "all-reduces and hops take 60% of each stage pass (160 all-reduces per pass) "
        "at mean batch 12.0"
    )
