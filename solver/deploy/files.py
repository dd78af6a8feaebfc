"""The files `fleetplan deploy` writes (YAML documents each open with `---`, so that the
files of a folder may be concatenated): name -> text, for each target.

- vllm, sglang, trtllm: `<pool>.sh`, one launch command per pool (and
  `<pool>.extra-llm-api-options.yaml` for trtllm), with the pool's replica counts in a
  comment; `pools.json`, every pool's deployment record.
- k8s: `<pool>.yaml`, the pool's objects (`manifests.kubernetes_objects`); for an hourly
  plan `fleetplan-schedule.yaml`, the ConfigMap of its hours (`schedule.schedule_object`).
- llm-d: `<name>.values.yaml`, ModelService values.
- dynamo: `<workload>-<region>.yaml`, a DynamoGraphDeployment.
"""

import dataclasses
import json
import shlex
from collections.abc import Iterable
from pathlib import Path

import yaml

from models.schema.instance import Instance
from models.schema.quantities import counted
from solver.deploy.engines import (
    ENGINES,
    MANIFEST_ENGINE,
    engine_command,
    layout_problems,
    overlap_notes,
    trtllm_command,
    trtllm_notes,
    trtllm_options,
)
from solver.deploy.manifests import (
    check_node_labels,
    dynamo_graph,
    kubernetes_objects,
    llm_d_values,
)
from solver.deploy.pools import DeployError, DeployPool, deploy_pools
from solver.deploy.schedule import SCHEDULE_NAME, schedule_object
from solver.plan.schema import Plan

TARGETS = (*ENGINES, "k8s", "llm-d", "dynamo")
"""What `deploy` writes for: three engines, Kubernetes, llm-d and Dynamo."""


DEPLOY_SUFFIXES = (".sh", ".json", ".yaml", ".yml")
"""What a deploy writes: a folder's file of these kinds that this deploy does not write is
another's (an earlier plan's pool), which `kubectl apply -f` and `fleet-import` of the
folder would take as this plan's."""


def stale_files(folder: Path, written: Iterable[str]) -> list[Path]:
    """The files of `folder` of a kind a deploy writes (`DEPLOY_SUFFIXES`) that are not
    among `written`."""
    if not folder.is_dir():
        return []
    keep = set(written)
    return sorted(
        path
        for path in folder.iterdir()
        if path.suffix.lower() in DEPLOY_SUFFIXES and path.name not in keep and path.is_file()
    )


WRITTEN_BY = "written by fleetplan deploy"
"""The mark every file a deploy writes carries (a comment of its scripts and YAML files;
`pools.json` is known by its records instead): a file of the same name without it is the
user's, never written over (`foreign_files`)."""
OWN_READ_BYTES = 1 << 16
"""How much of an existing file is read to tell whether a deploy wrote it (the mark is on
its first lines; `pools.json` is read whole up to `OWN_JSON_BYTES`)."""
OWN_JSON_BYTES = 1 << 26
"""A `pools.json` larger than this is not taken as a deploy's (a plan's records are
kilobytes; a 2 GB file is not read to find out)."""
_RECORD_KEYS = frozenset(("name", "workload", "region", "gpu", "replicas"))


def foreign_files(folder: Path, written: Iterable[str]) -> list[Path]:
    """The files of `folder` that this deploy would write over (same name) but that no
    deploy wrote: without `WRITTEN_BY` (or the `managed-by: fleetplan` label of a
    Kubernetes object an earlier version wrote), or a `pools.json` that is not a list of
    deployment records. Writing over them would lose what the user had there."""
    if not folder.is_dir():
        return []
    return sorted(
        folder / name
        for name in written
        if (folder / name).is_file() and not _written_by_deploy(folder / name)
    )


def _written_by_deploy(path: Path) -> bool:
    try:
        if path.name == "pools.json":
            if path.stat().st_size > OWN_JSON_BYTES:
                return False
            records = json.loads(path.read_text(encoding="utf-8"))
            return isinstance(records, list) and all(
                isinstance(r, dict) and r.keys() >= _RECORD_KEYS for r in records
            )
        with path.open("rb") as stream:
            head = stream.read(OWN_READ_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError, RecursionError):  # deep nesting: JSON, not a deploy's list
        return False
    return WRITTEN_BY in head or "managed-by: fleetplan" in head


def _yaml(documents: list) -> str:
    text = yaml.safe_dump_all(
        documents, sort_keys=False, default_flow_style=False, explicit_start=True
    )
    return f"# {WRITTEN_BY}\n{text}"


def _script(pool: DeployPool, command: list[str], notes: Iterable[str] = ()) -> str:
    comment = (
        f"{pool.name}: {counted(pool.replicas, 'replica')} of {pool.gpus_per_replica} x "
        f"{pool.gpu} in {pool.region} ({pool.normal_replicas} normal, {pool.spare_replicas} "
        "failover spare"
        + (
            f", {pool.started_replicas} more started after a region loss"
            if pool.started_replicas
            else ""
        )
        + f"); {WRITTEN_BY}"
    )
    lines = "".join(f"{_one_line(note)}\n" for note in notes)  # comment lines, '#' first
    return f"#!/bin/sh\n# {_one_line(comment)}\n{lines}exec {shlex.join(command)}\n"


def _one_line(text: str) -> str:
    """`text` with every character that is not printable (a newline above all: a region
    named 'x\\ntouch ...' ended the comment and ran the rest as a command) spelled
    `\\uNNNN`; the command's words are quoted by shlex."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def deploy_files(instance: Instance, plan: Plan, target: str) -> dict[str, str]:
    """The files of `target` (one of `TARGETS`) for every pool of `plan`.

    Raises:
        ValueError: an unknown target; `solver.deploy.pools.DeployError` for a plan that
            cannot be deployed, a pool whose layout the target's engine would start as
            another among them (`solver.deploy.engines.layout_problems`).
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    pools = deploy_pools(instance, plan)
    engine = target if target in ENGINES else MANIFEST_ENGINE
    problems = layout_problems(engine, pools)
    if problems:
        raise DeployError("; ".join(problems))
    if target not in ENGINES:  # the manifests select nodes by region and GPU
        check_node_labels(pools)
    files: dict[str, str] = {}
    if target in ENGINES:
        for pool in pools:
            if target == "trtllm":
                options = f"{pool.name}.extra-llm-api-options.yaml"
                options_text = yaml.safe_dump(trtllm_options(pool), sort_keys=False)
                notes = "".join(f"{line}\n" for line in trtllm_notes(pool))
                files[options] = f"# {WRITTEN_BY}\n{notes}{options_text}"
                command = trtllm_command(pool, options)
                files[f"{pool.name}.sh"] = _script(pool, command)
            else:
                command = engine_command(target, pool)
                files[f"{pool.name}.sh"] = _script(pool, command, overlap_notes(target, pool))
        files["pools.json"] = json.dumps([dataclasses.asdict(p) for p in pools], indent=2)
    elif target == "k8s":
        for pool in pools:
            files[f"{pool.name}.yaml"] = _yaml(kubernetes_objects((pool,)))
        schedule = schedule_object(plan, {"app.kubernetes.io/managed-by": "fleetplan"})
        if schedule is not None:
            files[f"{SCHEDULE_NAME}.yaml"] = _yaml([schedule])
    elif target == "llm-d":
        for name, values in llm_d_values(pools).items():
            files[f"{name}.values.yaml"] = _yaml([values])
    else:
        for graph in dynamo_graph(pools):
            files[f"{graph['metadata']['name']}.yaml"] = _yaml([graph])
    return files
