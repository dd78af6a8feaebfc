"""Expert parallelism inside tensor-parallel attention (dp = 1) dispatches nothing: after
the attention all-reduce every GPU of the stage holds every token, each expert rank runs
its own experts on all of them and the layer's TP all-reduce sums the partial outputs
(SGLang's default a2a backend `none`, vLLM's EP at data-parallel size 1, TensorRT-LLM's
EP without attention DP), so its communication is TP's. Only an all-to-all backend
(DeepEP, which SGLang's two-batch overlap runs) or attention DP sends tokens."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.collectives import tokens_dispatched
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model

FP8 = Precision.FP8


@pytest.mark.parametrize(
    ("ep", "dp", "backend", "dispatched"),
    [(8, 1, False, False), (8, 1, True, True), (1, 8, False, True), (8, 8, False, True),
     (1, 1, True, False)],
)  # fmt: skip
def test_tokens_travel_only_between_attention_groups_or_over_an_alltoall_backend(
    ep, dp, backend, dispatched
):
    assert tokens_dispatched(ep, dp, backend) is dispatched


def _steps(gpu: str, ep: int, overlap: bool = False, engine: str = "sglang-0.5"):
    h = gpu_catalog()[gpu]
    efficiency = efficiency_for(h, FP8, engine=engine).model_copy(
        update={"two_batch_overlap": overlap}
    )
    llm = llm_catalog()["minimax-m2.5"]
    return step_model(h, llm, FP8, Precision.BF16, 8, 1, efficiency, ep=ep)


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200"])
def test_minimax_at_tp8_ep8_pays_tp8s_all_reduces_and_no_all_to_all(gpu):
    # MiniMax-M2.5: 62 layers, all MoE. TP8: 2 all-reduces a layer = 124 a pass, at EP1 and
    # at EP8 alike (before: 62 attention all-reduces + 2 x 62 dispatch/combine collectives
    # at the generation's all-to-all latency, 50 us on Hopper: 62 x (2 x 50 - 15) us =
    # 5.3 ms more per decode pass on H100, where SGLang measures 8.05 ms TPOT at one user).
    ep8, ep1 = _steps(gpu, 8), _steps(gpu, 1)
    assert ep8.allreduces_per_pass == ep1.allreduces_per_pass == 2 * 62
    assert ep8.experts_layout.alltoall_collectives == 0
    assert ep8.experts_layout.alltoall_s(100) == 0.0
    for decode, kv, prefill, pairs in ((1, 750, 0, 0), (100, 75_000, 0, 0), (0, 0, 4000, 8e6)):
        assert ep8.pass_parts(decode, kv, prefill, pairs).comm_s == pytest.approx(
            ep1.pass_parts(decode, kv, prefill, pairs).comm_s
        )


def test_sglang_two_batch_overlap_at_tp8_ep8_runs_deepeps_all_to_all():
    # --enable-two-batch-overlap needs --moe-a2a-backend deepep: dispatch and combine per
    # MoE layer (2 x 62 = 124 collectives) and the attention all-reduce only (62).
    steps = _steps("h100-sxm", 8, overlap=True)
    assert steps.two_batch_overlap
    assert steps.experts_layout.alltoall_collectives == 2 * 62
    assert steps.allreduces_per_pass == 62


def test_vllm_overlap_switch_at_dp1_changes_nothing():
    # vLLM's DBO needs --data-parallel-size above 1: at TP8 x EP8 x DP1 the switch neither
    # splits the pass nor brings an all-to-all backend.
    on, off = _steps("h100-sxm", 8, True, "vllm-0.11"), _steps("h100-sxm", 8, False, "vllm-0.11")
    assert not on.two_batch_overlap
    assert on.experts_layout.alltoall_collectives == off.experts_layout.alltoall_collectives == 0
    assert on.pass_s(100, 75_000) == off.pass_s(100, 75_000)
