"""The checks behind "From instance to running fleet in four commands": the default plan
deployed, imported back and verified, and the pools table deploy's files hold."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.paths import REPO
from tests.readme.registry import DEMO, check, pct, usd
from tests.readme.runner import Runner

FLEET = "fleetplan solve instances/chat-3region.yaml --json plan.json"


@check("fleet-verify", FLEET)
def _fleet_verify(run: Runner) -> dict[str, str]:
    """The README's four commands: the default plan deployed to k8s, imported back as an
    instance that owns it, and verified (every GPU owned now)."""
    with tempfile.TemporaryDirectory() as folder:
        plan, k8s = Path(folder) / "plan.json", Path(folder) / "k8s"
        running, fleet = Path(folder) / "running.yaml", Path(folder) / "fleet.json"
        plan.write_text(json.dumps(run.json(DEMO)))
        instance = "--instance instances/chat-3region.yaml"
        for command in (
            f"fleetplan deploy {plan} {instance} --target k8s -o {k8s}",
            f"fleetplan fleet-import {k8s} {instance} --instance-out {running} --plan-out {fleet}",
        ):
            ran = run.run(command)
            assert ran.exit_code == 0, f"{command}: exit {ran.exit_code}: {ran.stderr[-500:]}"
        verdict = run.json(f"fleetplan verify {running} {fleet}")
    return {
        "verdict": f"{'ok' if verdict['ok'] else 'FAILS'}: {verdict['total_gpus']} GPUs, "
        f"{usd(verdict['cost_per_month'])}/month",
    }


DEPLOY = "fleetplan deploy plan.json --instance instances/chat-3region.yaml --target k8s -o k8s/"


@check("deploy-table", DEPLOY)
def _deploy_table(run: Runner) -> dict[str, str]:
    """The default plan's pools as deploy writes them (solver.deploy.pools.deploy_pools):
    replicas (normal + spare), the batch cap and the autoscaler's scale-out thresholds, one
    figure a table row, by region as the instance lists them, then by name."""
    from models.io.loading import load_instance
    from solver.deploy.pools import deploy_pools
    from solver.plan.schema import Plan

    instance = load_instance(REPO / "instances" / "chat-3region.yaml")
    pools = deploy_pools(instance, Plan.model_validate(run.json(DEMO)))
    regions = [region.name for region in instance.regions]

    def row(pool) -> str:
        scale = pool.autoscale
        cells = [f"queue {scale.queue_depth_scale_out:.1f}"] * ("queue_depth" in scale.signals)
        cells += [f"KV {pct(scale.kv_usage_scale_out)}"] * ("kv_cache_usage" in scale.signals)
        replicas = f"{pool.replicas} ({pool.normal_replicas} + {pool.spare_replicas})"
        return f"{pool.name} | {replicas} | {pool.max_batch} | {', '.join(cells)}"

    ordered = sorted(pools, key=lambda pool: (regions.index(pool.region), pool.name))
    return {f"pool{n}": row(pool) for n, pool in enumerate(ordered, start=1)}
