"""Instances built in code: tiny ones whose plans can be worked out by hand, and generated
ones that grow in regions x workloads x GPU types (for the scaling benchmark); and
capacity records with made-up numbers for tests where the physics is not under test.

Everything goes through `models.io.loading.validate_instance`, the same validation as an
instance file.
"""

import random
from pathlib import Path
from typing import Any

from models.io.loading import validate_instance
from models.schema.instance import Instance
from models.serving.replica import Limit, ReplicaCapacity, ReplicaConfig

PROMPT_TOKENS = 1000
OUTPUT_TOKENS = 200
TTFT_P99_MS = 1000.0
TPOT_P99_MS = 50.0
FLAT_SLO = {"ttft_p99_ms": 10000.0, "tpot_p99_ms": 200.0}
"""Targets loose enough that Llama 3.1 8B's KV cache stops the batch on every GPU the hand
cases use (the p99s have room): pooling cannot lift such a replica, so n replicas carry
exactly n q(1) and a hand case is plain arithmetic on q. At the default targets the 8B
replica is TPOT-limited, which a larger pool lifts (its batch spreads less)."""


def with_policy(instance: Instance, **changes: Any) -> Instance:
    """`instance` with `policy` fields changed (a copy; the instance is untouched)."""
    return instance.model_copy(update={"policy": instance.policy.model_copy(update=changes)})


def workload(
    name: str,
    demand_rps: dict[str, float],
    model: str = "llama-3.1-8b",
    ttft_p99_ms: float | None = TTFT_P99_MS,
    tpot_p99_ms: float | None = TPOT_P99_MS,
    prompt_tokens: float = PROMPT_TOKENS,
    output_tokens: float = OUTPUT_TOKENS,
    max_failover_rtt_ms: float | None = None,
) -> dict[str, Any]:
    """A workload with fixed-length requests (so the capacity is easy to reproduce)."""
    return {
        "name": name,
        "model": model,
        "demand": {r: {"peak_requests_per_s": rate} for r, rate in demand_rps.items()},
        "prompt_tokens": {"mean": prompt_tokens, "p99": prompt_tokens},
        "output_tokens": {"mean": output_tokens, "p99": output_tokens},
        "slo": {
            "ttft_p99_ms": ttft_p99_ms,
            "tpot_p99_ms": tpot_p99_ms,
            "max_failover_rtt_ms": max_failover_rtt_ms,
        },
    }


def long_prompt_workload(name: str, demand_rps: float) -> dict[str, Any]:
    """32K-token prompts on Llama 3.3 70B in `east`, p99 TTFT 2 s (fixed lengths)."""
    return workload(
        name,
        {"east": demand_rps},
        model="llama-3.3-70b",
        prompt_tokens=32000,
        output_tokens=500,
        ttft_p99_ms=2000,
        tpot_p99_ms=60,
    )


def made_up_capacity(config: ReplicaConfig, **fields: Any) -> ReplicaCapacity:
    """A capacity record with made-up numbers: a replica that fits and meets the SLO, at
    limit `tpot`, with every figure 0 unless given in `fields`."""
    record: dict[str, Any] = {
        "fits": True,
        "meets_slo": True,
        "requests_per_s": 0.0,
        "limit": Limit.TPOT,
        "reason": "made up",
        "weight_bytes_per_gpu": 0.0,
        "kv_bytes_per_token": 0.0,
        "kv_capacity_tokens": 0.0,
        "max_batch": 0,
        "batch": 0.0,
        "prefill_s": 0.0,
        "decode_step_s": 0.0,
        "ttft_p99_s": 0.0,
        "tpot_p99_s": 0.0,
        "best_ttft_p99_s": 0.0,
        "best_tpot_s": 0.0,
        "output_tokens_per_s": 0.0,
        "kv_transfer_bytes_per_request": 0.0,
    }
    return ReplicaCapacity(config=config, **(record | fields))


def instance(*args: Any, **kwargs: Any) -> Instance:
    """`instance_data`, validated as an instance file is."""
    data = instance_data(*args, **kwargs)
    return validate_instance(data, data["name"])


def us_eu_chat() -> Instance:
    """One chat workload on H100s in us ($2.40 a GPU-hour, 12 requests/s) and eu ($2.90,
    6 requests/s), 80 ms apart, surviving a region loss: the levers' small base."""
    return instance(
        {"us": {"h100-sxm": (64, 2.40)}, "eu": {"h100-sxm": (64, 2.90)}},
        [workload("chat", {"us": 12.0, "eu": 6.0})],
        links=[("us", "eu", 80.0)],
        survive="region",
    )


def two_workloads() -> Instance:
    """Two H100 regions 50 ms apart surviving a region loss: chat with users in both,
    code (3,000-token prompts) in west: two workload programs, small enough for one
    process."""
    return instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.1)}},
        [
            workload("chat", {"east": 80.0, "west": 30.0}, max_failover_rtt_ms=80),
            workload("code", {"west": 50.0}, prompt_tokens=3000, max_failover_rtt_ms=80),
        ],
        links=[("east", "west", 50)],
        survive="region",
    )


def instance_data(
    supply: dict[str, dict[str, tuple[int, float]]],
    workloads: list[dict[str, Any]],
    *,
    gpus: list[str] | None = None,
    models: dict[str, list[str]] | None = None,
    links: list[tuple[str, str, float]] = (),
    survive: str = "none",
    tensor_parallel: list[int] = (1,),
    pipeline_parallel: list[int] = (1,),
    disaggregation: bool = False,
    zones: int = 1,
    existing: dict[str, dict[str, int]] | None = None,
    name: str = "synthetic",
    mip_gap: float = 0.0,
    time_limit_s: float = 60.0,
    policy: dict[str, Any] | None = None,
    region_keys: dict[str, Any] | None = None,
    top: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An instance file's contents from plain arguments.

    Purchases are single GPUs with any number of configurations per pool
    (`buy_unit: gpu`, `max_configs_per_pool: null`) unless `policy` says otherwise, so
    that hand arithmetic about capacity is not about server rounding.

    Args:
        supply: region -> GPU -> (max_gpus, price per GPU-hour).
        workloads: from `workload(...)`.
        gpus: GPU types declared (default: every type in `supply` and `existing`).
        models: model -> weight precisions (default: fp8 for every workload's model).
        links: [a, b, rtt_ms] region links.
        existing: region -> GPU -> GPUs already owned.
        policy: further `policy` keys (they win over the ones above).
        region_keys: further keys of every region (`power_kw`, `pue`, ...).
        top: further top-level keys (`demand_growth`).
    """
    existing = existing or {}
    declared = gpus or sorted(
        {g for offers in supply.values() for g in offers}
        | {g for owned in existing.values() for g in owned}
    )
    models = models or {w["model"]: ["fp8"] for w in workloads}
    regions = list(supply) + [r for r in existing if r not in supply]
    data = {
        "name": name,
        "gpus": [{"name": g} for g in declared],
        "models": [{"name": m, "weight_precisions": p} for m, p in models.items()],
        "regions": [
            {
                "name": r,
                "supply": {
                    g: {"max_gpus": n, "price_per_gpu_hour": price}
                    for g, (n, price) in supply.get(r, {}).items()
                },
                "existing": existing.get(r, {}),
                "zones": zones,
                **(region_keys or {}),
            }
            for r in regions
        ],
        "links": [list(link) for link in links],
        "workloads": workloads,
        "policy": {
            "survive": survive,
            "tensor_parallel": list(tensor_parallel),
            "pipeline_parallel": list(pipeline_parallel),
            "disaggregation": disaggregation,
            "hours_per_month": 730,
            "buy_unit": "gpu",
            "max_configs_per_pool": None,
            **(policy or {}),
        },
        "solver": {"mip_gap": mip_gap, "time_limit_s": time_limit_s},
        **(top or {}),
    }
    return data


GPU_MENU = [
    ("h100-sxm", 2.40),
    ("h200", 3.10),
    ("b200", 5.20),
    ("mi300x", 2.90),
    ("a100-80gb-sxm", 1.30),
    ("l40s", 0.90),
]
"""GPU types the generator draws from, with a base price per GPU-hour."""
MODEL_MENU = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "qwen2.5-72b", "mixtral-8x7b"]
MIX_MENU = [(1000, 200), (3000, 400), (500, 500)]


def generated(
    regions: int,
    workloads: int,
    gpu_types: int,
    survive: str = "region",
    seed: int = 0,
    mip_gap: float = 1e-3,
) -> Instance:
    """`generated_data`, validated as an instance file is."""
    data = generated_data(regions, workloads, gpu_types, survive, seed, mip_gap)
    return validate_instance(data, data["name"])


def at_policy_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (from `generated_data`) without the generator's single GPUs and free pools:
    the policy's defaults (whole servers, one configuration per pool) apply."""
    for key in ("buy_unit", "max_configs_per_pool"):
        data["policy"].pop(key)
    return data


def generated_data(
    regions: int,
    workloads: int,
    gpu_types: int,
    survive: str = "region",
    seed: int = 0,
    mip_gap: float = 1e-3,
) -> dict[str, Any]:
    """A synthetic planning problem, as an instance file's contents: regions on a ring
    with chords, every region offering `gpu_types` GPU types at regional prices (and
    three zones when `survive` is zone), workloads drawn from a few model and token
    mixes with demand in most regions. Deterministic in `seed`. One region has no link
    (and then only `survive` none or zone is a valid question)."""
    rng = random.Random(seed)
    names = [f"r{i:02d}" for i in range(regions)]
    menu = GPU_MENU[:gpu_types]
    supply = {
        r: {
            g: (rng.choice([64, 128, 256, 512]), round(p * rng.uniform(0.9, 1.2), 2))
            for g, p in menu
        }
        for r in names
    }
    links = [(names[i], names[(i + 1) % regions], rng.choice([20, 40, 60])) for i in range(regions)]
    if regions <= 2:  # a ring of two is one link; of one, none (a link joins two regions)
        links = links[: regions - 1]
    links += [
        (names[i], names[(i + regions // 2) % regions], rng.choice([70, 90]))
        for i in range(regions // 2)
        if regions > 3
    ]
    loads = []
    for k in range(workloads):
        prompt, output = MIX_MENU[k % len(MIX_MENU)]
        model = MODEL_MENU[k % len(MODEL_MENU)]
        small = "8b" in model or "8x7b" in model
        demand = {
            r: round(rng.uniform(2, 40 if small else 8), 2)
            for r in names
            if rng.random() < 0.8 or r == names[k % regions]
        }
        loads.append(
            workload(
                f"w{k:02d}",
                demand,
                model=model,
                prompt_tokens=prompt,
                output_tokens=output,
                ttft_p99_ms=2000,
                tpot_p99_ms=60,
                max_failover_rtt_ms=100,
            )
        )
    return instance_data(
        supply,
        loads,
        models={m: ["fp8", "bf16"] for m in dict.fromkeys(w["model"] for w in loads)},
        links=links,
        survive=survive,
        tensor_parallel=[1, 2, 4, 8],
        zones=3 if survive == "zone" else 1,
        name=f"gen-{regions}r-{workloads}w-{gpu_types}g-{survive}",
        mip_gap=mip_gap,
        time_limit_s=300,
    )


def solved_files(folder: Path, name: str, text: str) -> tuple[Path, Path]:
    """(instance file, plan file) in `folder`: the instance YAML `text` written as
    `<name>.yaml`, solved, its plan written as `plan.json` (what a command given both
    reads)."""
    import yaml

    from solver.solve import solve

    instance_file = folder / f"{name}.yaml"
    instance_file.write_text(text)
    plan = solve(validate_instance(yaml.safe_load(text), str(instance_file)))
    plan_file = folder / "plan.json"
    plan_file.write_text(plan.model_dump_json())
    return instance_file, plan_file
