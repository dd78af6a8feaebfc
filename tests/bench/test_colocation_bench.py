"""Co-location benchmark: Zipf-demand instances of 20 and 50 small models, with and
without region loss, with co-resident engines only and with multi-LoRA too: solve time
(template generation included), the saving against dedicated pools (the same instance
solved with colocation off), and column generation's packing bound and gap. Run by
`make bench`."""

import time

import pytest

from models.io.loading import validate_instance
from solver.solve import solve
from tests.synthetic import workload

TOP_RPS = 60.0
"""Peak requests/s of the most used model; the k-th gets TOP_RPS / k (Zipf, s = 1)."""


def zipf_instance(models: int, survive: str, multi_lora: bool = False) -> dict:
    """`models` fine-tunes of Llama 3.1 8B, demand TOP_RPS / k split over two regions."""
    regions = ["east", "west"]
    return {
        "name": f"zipf-{models}-{survive}",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": f"m{k}-8b", "base": "llama-3.1-8b"} for k in range(1, models + 1)],
        "regions": [
            {"name": r, "supply": {"h100-sxm": {"max_gpus": 512, "price_per_gpu_hour": 2.4}}}
            for r in regions
        ],
        "links": [["east", "west", 60]],
        "workloads": [
            workload(f"w{k}", dict.fromkeys(regions, TOP_RPS / k / 2), model=f"m{k}-8b")
            for k in range(1, models + 1)
        ],
        "solver": {"time_limit_s": 1800},
        "policy": {
            "survive": survive,
            "tensor_parallel": [1],
            "colocation": True,
            "multi_lora": multi_lora,
        },
    }


@pytest.mark.parametrize("multi_lora", [False, True])
@pytest.mark.parametrize("survive", ["none", "region"])
@pytest.mark.parametrize("models", [20, 50])
def test_colocation_bench(models, survive, multi_lora):
    instance = validate_instance(zipf_instance(models, survive, multi_lora))
    started = time.monotonic()
    plan = solve(instance)
    elapsed = time.monotonic() - started
    t = plan.tiering
    assert t is not None and t.saving_per_month is not None
    assert t.saving_per_month >= -1e-6
    shared = sum(1 for e in plan.replicas if e.shared)
    search = plan.colocation
    assert search is not None
    gap = f"{search.gap:.1%}" if search.gap is not None else "n/a"
    print(
        f"\n{models} models, survive {survive}, multi_lora {multi_lora}: {elapsed:.1f} s "
        f"(both solves), {search.groups_checked} groups checked in {search.rounds} rounds, "
        f"packing gap {gap} ({'proven' if 'proven' in search.note else 'not proven'}), "
        f"{t.templates} templates in {t.enumeration_s:.1f} s; {plan.total_gpus} GPUs vs "
        f"{t.gpus_dedicated} dedicated; ${t.saving_per_month:,.0f}/month saved; idle "
        f"{t.idle_fraction_dedicated:.1%} -> {t.idle_fraction:.1%}; {shared} shared groups; "
        f"{plan.solver.method}"
    )
