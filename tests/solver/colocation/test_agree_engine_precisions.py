"""A multi-LoRA engine serves only members whose model entries allow its weight
precision, as their own candidates do and the verifier checks.

A base listed at fp8 alone and two adapters that list no precision (so bf16, the
default): the one-engine template took the strictest member's layout (the base's, fp8)
for the whole family, and the verifier rejected the plan ('support: weight precision fp8
is not allowed for support-8b'): `solve` exit 70 on a plain instance. Now the fp8 engine
is offered to the members that allow fp8 (the base's workload alone: no template); the
plan serves chat on one fp8 replica and the two adapters on one shared bf16 replica
(one 8-GPU server bought: 8 x 2.4 x 730 = $14,016/month), and the verifier accepts it."""

from models.io.loading import validate_instance
from solver.solve import solve
from solver.verify.hours import verify_any


def _base_and_adapters():
    def chat(name: str, model: str, rate: float) -> dict:
        return {
            "name": name,
            "model": model,
            "demand": {"east": {"peak_requests_per_s": rate}},
            "prompt_tokens": {"mean": 2000, "p99": 6000},
            "output_tokens": {"mean": 200, "p99": 600},
            "slo": {"ttft_p99_ms": 1500, "tpot_p99_ms": 50},
        }

    data = {
        "name": "base-fp8-adapters-default",
        "gpus": [{"name": "h100-sxm"}],
        "models": [
            {"name": "llama-3.1-8b", "weight_precisions": ["fp8"]},
            {"name": "support-8b", "base": "llama-3.1-8b", "rank": 16},
            {"name": "sales-8b", "base": "llama-3.1-8b", "rank": 16},
        ],
        "regions": [
            {"name": "east", "supply": {"h100-sxm": {"max_gpus": 16, "price_per_gpu_hour": 2.4}}}
        ],
        "workloads": [
            chat("chat", "llama-3.1-8b", 3.0),
            chat("support", "support-8b", 0.5),
            chat("sales", "sales-8b", 0.3),
        ],
        "policy": {
            "survive": "none",
            "colocation": True,
            "multi_lora": True,
            "tensor_parallel": [1],
            "pipeline_parallel": [1],
        },
    }
    return validate_instance(data, "adapters.yaml")


def test_an_engine_serves_only_members_that_allow_its_precision():
    inst = _base_and_adapters()
    plan = solve(inst)  # raised PlanRejected: the verifier runs inside
    assert verify_any(inst, plan).ok
    for pool in plan.replicas:
        for workload in pool.workloads:
            entry = inst.model_entry(inst.workload(workload).model)
            assert pool.precision in entry.weight_precisions, (pool.label, workload)
