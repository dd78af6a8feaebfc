"""Shared prefixes, KV tiers and prefix affinity through the program: metamorphic
checks on the shipped instances, the verifier, the CLI flags and input errors."""

import json

import pytest

from cli.exit_codes import ExitCode
from models.io.loading import load_instance
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import INSTANCES
from tests.synthetic import with_policy

AFFINITY = INSTANCES / "prefix-affinity-doc-qa.yaml"
TIERED = INSTANCES / "kv-tiers-doc-qa.yaml"


def _cost(instance) -> float:
    plan = solve(instance)
    assert verify(instance, plan).ok
    return plan.cost_per_month


def _solve(instance):
    plan = solve(instance)
    assert verify(instance, plan).ok
    return plan


def test_affinity_never_raises_cost_and_here_saves_the_prefill_of_its_hits():
    """Affinity routing serves every customer's documents from its home replicas: a hit
    rate h_a = (2K + 0.75 x 20K) / 24K, against the h_r a random replica's HBM allows. A
    request then prefills (1 - h_a) / (1 - h_r) as many new tokens, so the prefill part p
    of the random fleet (the plan's prefill share of its cost) shrinks by that ratio and
    its decode part does not: the affinity fleet's replicas need at most about
    p (1 - h_a) / (1 - h_r) + 1 - p of the random fleet's GPUs. Those are the replicas'
    GPUs (the bill rounds both fleets up to whole servers), and "about": the new tokens
    still attend to the cached prefix, which the token ratio leaves out, while the
    affinity plan may pick a layout that fits its smaller prefill better."""
    affinity = load_instance(AFFINITY)
    random_routing = with_policy(affinity, prefix_affinity=False)
    plan, random_plan = _solve(affinity), _solve(random_routing)
    assert plan.cost_per_month <= random_plan.cost_per_month

    hit_affinity = (2000 + 0.75 * 20000) / 24000
    assert plan.replicas
    assert all(p.prefix_hit_rate == pytest.approx(hit_affinity) for p in plan.replicas)
    (hit_random,) = {pool.prefix_hit_rate for pool in random_plan.replicas}
    assert hit_random is not None and hit_random < hit_affinity
    new_tokens_ratio = (1 - hit_affinity) / (1 - hit_random)
    (attribution,) = random_plan.cost_attribution
    prefill = attribution.prefill_share
    bound = prefill * new_tokens_ratio + (1 - prefill)

    def gpus(served) -> int:
        return sum(pool.count * pool.tp * pool.pp * pool.dp for pool in served.replicas)

    assert gpus(plan) <= gpus(random_plan) * bound


def test_adding_kv_tiers_never_raises_cost():
    tiered = load_instance(TIERED)
    bare_gpus = [
        entry.model_copy(
            update={
                "host_memory_gib_per_gpu": None,
                "nvme_tb_per_node": None,
                "nvme_gb_s_per_node": None,
                "nvme_dwpd": None,
            }
        )
        for entry in tiered.gpus
    ]
    bare = tiered.model_copy(update={"gpus": bare_gpus})
    assert _cost(tiered) <= _cost(bare)


def test_a_higher_hit_rate_never_raises_cost():
    base = load_instance(INSTANCES / "long-prompt-32k-cached.yaml")
    workload = base.workloads[0]
    lower = base.model_copy(
        update={"workloads": [workload.model_copy(update={"prefix_cache_hit_rate": 0.8})]}
    )
    assert _cost(base) <= _cost(lower)


PERF = [
    "perf", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-p", "fp8", "-i", "8000", "-o", "300",
    "--ttft-p99-ms", "2000", "--tpot-p99-ms", "50",
]  # fmt: skip
TIER_FLAGS = [
    "--host-memory-gib-per-gpu", "256", "--nvme-tb-per-node", "30.72",
    "--nvme-gb-s-per-node", "25", "--nvme-dwpd", "1",
]  # fmt: skip


def test_perf_kv_tiers_json_has_the_tier_table(run_cli):
    result = run_cli(*PERF, "--prefix-tokens", "6000", "--prefix-share", "0.5", "--kv-tiers",
                     *TIER_FLAGS, "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    tiers = {row["tier"]: row for row in data["kv_tiers"]}
    assert set(tiers) == {"hbm", "dram", "ssd"}
    assert set(tiers["ssd"]) == {
        "tier", "capacity_tokens", "fetch_ms_per_1k_tokens", "recompute_ms_per_1k_tokens", "used"
    }  # fmt: skip
    # 8B on one H100 with 4 drives' worth of NVMe per node: the SSD is not worth it.
    assert tiers["ssd"]["used"] is False and tiers["dram"]["used"] is True
    assert "ssd_lifetime_days" not in data
    assert data["prefix_hit_rate"] == pytest.approx(6000 * 0.5 / 8000)
    assert data["spill_threshold_ms"] > 0


def test_perf_reports_ssd_lifetime_when_the_ssd_is_used(run_cli):
    args = [*PERF[:2], "llama-3.3-70b", *PERF[3:], "--tp", "8", "--kv-tiers", *TIER_FLAGS]
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert any(row["tier"] == "ssd" and row["used"] for row in data["kv_tiers"])
    assert data["ssd_lifetime_days"] > 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--prefix-tokens", "-5"], "--prefix-tokens"),
        (["--prefix-tokens", "100", "--prefix-share", "1.5"], "--prefix-share"),
        (["--prefix-tokens", "9000"], "exceeds the p99 prompt"),
    ],
)
def test_bad_prefix_flags_exit_2(run_cli, flags, message):
    result = run_cli(*PERF, *flags)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.stderr


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("{tokens: 0, share: 0.5}", "tokens"),
        ("{tokens: 100, share: 1.5}", "share"),
        ("{tokens: 40000, share: 0.5}", "exceeds the p99 prompt"),
        ("{tokens: 20000, share: 1.0, count: 2}", "exceeds the mean prompt"),
    ],
)
def test_bad_prefixes_in_the_instance_exit_2(run_cli, tmp_path, prefix, message):
    text = AFFINITY.read_text().replace(
        "      - {tokens: 2000, share: 1.0}\n", f"      - {prefix}\n"
    )
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = run_cli("validate", str(path))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.stdout + result.stderr
