"""simulate names each pool as the plan does: by its configuration's label
(`solver.plan.records.layout_label`), not by GPU, precision and TP x PP alone.

Before, an attention-DP, expert-parallel replica (`h200 fp8 tp1xpp1xdp8 ep8 unified`,
eight GPUs) was printed and written as `h200 fp8 tp1xpp1`, the label of a one-GPU
replica, and two pools of one region that differ only in DP, EP, speculation or role
could not be told apart in the replay's table or its JSON."""

from cli.simulate import simulation_tables
from models.io.loading import validate_instance
from solver.simulate.replay import simulate_plan
from solver.solve import solve


def _moe_dep(rate_rps: float = 4.0):
    """Qwen3-235B-A22B on H200 where the only layout is one TP rank per attention-DP
    group, eight groups, experts over eight ranks (8 GPUs a replica)."""
    data = {
        "name": "moe-dep",
        "gpus": [{"name": "h200"}],
        "models": [{"name": "qwen3-235b-a22b", "weight_precisions": ["fp8"]}],
        "regions": [
            {"name": "east", "supply": {"h200": {"max_gpus": 64, "price_per_gpu_hour": 3.1}}}
        ],
        "workloads": [
            {
                "name": "chat",
                "model": "qwen3-235b-a22b",
                "demand": {"east": {"peak_requests_per_s": rate_rps}},
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 2000, "tpot_p99_ms": 60},
            }
        ],
        "policy": {
            "survive": "none",
            "tensor_parallel": [1],
            "pipeline_parallel": [1],
            "expert_parallel": [8],
            "attention_data_parallel": [8],
        },
    }
    return validate_instance(data, "moe-dep")


def test_a_dp_ep_pool_is_replayed_under_the_plans_label():
    inst = _moe_dep()
    plan = solve(inst)
    (pool,) = plan.replicas
    assert (pool.tp, pool.dp, pool.ep) == (1, 8, 8)
    assert pool.label == "h200 fp8 tp1xpp1xdp8 ep8 unified"
    replay = simulate_plan(inst, plan, duration_s=10.0)
    (row,) = replay.pools
    assert row.configuration == pool.label
    (table,) = simulation_tables(replay)
    assert table.rows[0][0] == f"chat east {pool.label}"
