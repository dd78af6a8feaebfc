"""A q/k norm across every head (MiniMax-M2's `qk_norm_type: per_layer`) costs one more
all-reduce per layer under tensor parallelism: each GPU holds some heads, so the rows'
sums of squares are summed over the TP group before normalising (SGLang's
MiniMaxM2QKRMSNorm: attn_tp_all_reduce(sum_sq)). A few bytes a token: its latency."""

import json

import pytest

from models.io.hf_config import llm_from_hf_config
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from tests.paths import REPO

FP8, BF16 = Precision.FP8, Precision.BF16


def _steps(tp: int, across_heads: bool):
    gpu = gpu_catalog()["h100-sxm"]
    llm = llm_catalog()["minimax-m2.5"].model_copy(update={"qk_norm_across_heads": across_heads})
    efficiency = efficiency_for(gpu, FP8, engine="sglang-0.5")
    return step_model(gpu, llm, FP8, BF16, tp, 1, efficiency, ep=tp), efficiency


def test_the_catalog_and_the_config_json_say_minimax_norms_across_heads():
    assert llm_catalog()["minimax-m2.5"].qk_norm_across_heads
    # the released config.json's fields (tests/fixtures/hf_configs/minimax-m2.5.json)
    per_layer = json.loads((REPO / "tests/fixtures/hf_configs/minimax-m2.5.json").read_text())
    assert (per_layer["use_qk_norm"], per_layer["qk_norm_type"]) == (True, "per_layer")
    config = {k: v for k, v in per_layer.items() if k not in ("use_qk_norm", "qk_norm_type")}
    assert llm_from_hf_config(per_layer, "m").qk_norm_across_heads
    assert not llm_from_hf_config(config, "m").qk_norm_across_heads  # no norm at all
    per_head = {**per_layer, "qk_norm_type": "per_head"}
    assert not llm_from_hf_config(per_head, "m").qk_norm_across_heads


@pytest.mark.parametrize("tokens", [(1, 750, 0, 0), (100, 75_000, 0, 0), (0, 0, 4000, 8e6)])
def test_minimax_at_tp8_pays_62_more_all_reduce_latencies_a_pass(tokens):
    with_norm, efficiency = _steps(8, True)
    without, _ = _steps(8, False)
    # 62 layers x one all-reduce's latency (15 us): 0.93 ms a pass, whatever the tokens
    extra_s = 62 * efficiency.allreduce_latency_s
    assert extra_s == pytest.approx(62 * 15e-6)
    assert with_norm.pass_parts(*tokens).comm_s - without.pass_parts(*tokens).comm_s == (
        pytest.approx(extra_s)
    )


def test_one_gpu_holds_every_head_and_reduces_nothing():
    with_norm, _ = _steps(1, True)
    without, _ = _steps(1, False)
    assert with_norm.norm_allreduce_s == 0.0
    assert with_norm.pass_s(16, 16 * 750) == without.pass_s(16, 16 * 750)
