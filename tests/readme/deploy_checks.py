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
FLEET_IMPORT = (
    "fleetplan fleet-import k8s/ --instance instances/chat-3region.yaml"
    " --instance-out running.yaml --plan-out fleet.json"
)


@check("fleet-verify", FLEET)
def _fleet_verify(run: Runner) -> dict[str, str]:
    """The README's four commands: the default plan deployed to k8s, imported back as an
    instance that owns it, and verified (every GPU owned now)."""
    with tempfile.TemporaryDirectory() as folder:
        running, fleet = _imported_default(run, Path(folder))
        verdict = run.json(f"fleetplan verify {running} {fleet}")
    return {
        "verdict": f"{'ok' if verdict['ok'] else 'FAILS'}: {verdict['total_gpus']} GPUs, "
        f"{usd(verdict['cost_per_month'])}/month",
    }


@check("fleet-resolve", FLEET_IMPORT, slow=True)
def _fleet_resolve(run: Runner) -> dict[str, str]:
    """The imported default fleet solved again: what it costs and the servers it buys."""
    with tempfile.TemporaryDirectory() as folder:
        running, _fleet = _imported_default(run, Path(folder))
        plan = run.json(f"fleetplan solve {running}")
    servers = sum(server["count"] for server in plan["servers"])
    return {
        "resolved": f"{usd(plan['cost_per_month'])}/month, "
        + ("nothing to buy" if servers == 0 else f"{servers} servers to buy"),
    }


def _imported_default(run: Runner, root: Path) -> tuple[Path, Path]:
    """The default plan deployed to k8s under `root` and imported back: the instance that
    owns it and the fleet."""
    plan, k8s = root / "plan.json", root / "k8s"
    running, fleet = root / "running.yaml", root / "fleet.json"
    plan.write_text(json.dumps(run.json(DEMO)))
    instance = "--instance instances/chat-3region.yaml"
    _ran(run, f"fleetplan deploy {plan} {instance} --target k8s -o {k8s}")
    _ran(
        run,
        f"fleetplan fleet-import {k8s} {instance} --instance-out {running} --plan-out {fleet}",
    )
    return running, fleet


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


DIURNAL = "fleetplan solve instances/diurnal-chat-batch.yaml"  # checks.py's, run once
VERIFY = "fleetplan verify running.yaml fleet.json"


@check("fleet-import-hourly", VERIFY, slow=True)
def _fleet_import_hourly(run: Runner) -> dict[str, str]:
    """diurnal-chat-batch's plan deployed to k8s and imported back, with its schedule (the
    ConfigMap deploy writes) and without it (the peak fleet read as a static plan), each
    fleet verified against the instance fleet-import wrote and against the original."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        plan, k8s = root / "plan.json", root / "k8s"
        plan.write_text(json.dumps(run.json(DIURNAL)))
        original = "instances/diurnal-chat-batch.yaml"
        _ran(run, f"fleetplan deploy {plan} --instance {original} --target k8s -o {k8s}")

        def verdicts(name: str) -> tuple[dict, dict]:
            running, fleet = root / f"{name}.yaml", root / f"{name}.json"
            _ran(
                run,
                f"fleetplan fleet-import {k8s} --instance {original} --instance-out {running}"
                f" --plan-out {fleet}",
            )
            return tuple(run.json(f"fleetplan verify {i} {fleet}") for i in (running, original))

        hourly = verdicts("hourly")
        (k8s / "fleetplan-schedule.yaml").unlink()
        _written, static = verdicts("static")
    costs = {usd(verdict["cost_per_month"]) for verdict in hourly}
    ok = "ok" if all(verdict["ok"] for verdict in hourly) else "FAILS"
    return {
        "hourly": f"{' / '.join(sorted(costs))}/month and {ok}, both ways",
        "static": f"{usd(static['cost_per_month'])}/month with {len(static['violations'])} "
        "violations",
    }


def _ran(run: Runner, command: str) -> None:
    ran = run.run(command)
    assert ran.exit_code == 0, f"{command}: exit {ran.exit_code}: {ran.stderr[-500:]}"
