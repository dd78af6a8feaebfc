"""Commands `deploy` and `fleet-import`: a plan to engine arguments and manifests, and a
running fleet back to an instance's existing GPUs and a fleet plan.

Parsing and writing only: the files come from `solver.deploy.files`, the fleet from
`solver.deploy.fleet_import`.
"""

import os
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from cli.options import emit_json, load, require_verified, within
from cli.render.console import err
from models.io.documents import (
    INSTANCE_SUFFIXES,
    instance_text,
    read_document,
    read_text,
    yaml_documents,
)
from models.io.loading import validate_instance
from models.io.output_files import check_target, check_targets, write_text
from models.io.output_kinds import PLAN
from models.schema import limits
from models.schema.errors import InputError, Issue
from models.schema.quantities import counted

TARGET_HELP = (
    "vllm | sglang | trtllm (launch commands), k8s (Deployments, spare, HPA), llm-d, dynamo."
)


def _problem(where: str, field: str, message: str) -> InputError:
    return InputError([Issue(where, None, field, message)])


def deploy(
    plan_file: Annotated[Path, typer.Argument(help="Plan JSON from `fleetplan solve --json`.")],
    instance_file: Annotated[
        Path, typer.Option("--instance", help="The instance the plan was solved for.")
    ],
    target: Annotated[str, typer.Option("--target", help=TARGET_HELP)],
    out_dir: Annotated[Path, typer.Option("-o", "--out", help="Folder to write the files to.")],
    month: Annotated[
        int | None,
        typer.Option(
            "--month",
            help="Month of a plan with months (policy.horizon_months) to deploy: its pools "
            "at their largest count over its hours, and its schedule. Default: month 0.",
            callback=within(limits.MONTH),
        ),
    ] = None,
) -> None:
    """Write each pool's engine launch arguments or deployment manifests for a plan.

    Per pool: model, precision and KV precision, TP/PP/EP/DP, batch cap and tokens per
    iteration, chunked prefill, prefix caching and KV tiers, speculative decoding, the
    prefill/decode pair and its KV transfer. For k8s: the normal scenario's replicas, the
    failover spare as its own object, and an HPA on prefill queue depth and KV-cache
    usage at the thresholds the plan's headroom rule derives (never GPU utilisation).
    A plan of months deploys month 0, or with --month N month N's fleet and schedule.
    Only a plan the verifier accepts for the instance is deployed (exit 1 otherwise, the
    violations on stderr).
    """
    from cli.solve import _read_plan
    from solver.deploy.files import TARGETS, deploy_files, foreign_files, stale_files
    from solver.deploy.pools import DeployError
    from solver.deploy.schedule import MonthRefused, month_plan

    if target not in TARGETS:
        raise _problem(
            "command line", "--target", f"{target!r}; choose one of {', '.join(TARGETS)}"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise _problem(str(out_dir), "-o", "exists and is not a folder")
    if (blocked := _unmakeable(out_dir)) is not None:
        raise _problem(str(out_dir), "-o", blocked)
    instance = load(instance_file, None)
    plan = _read_plan(plan_file)
    try:
        deployed = plan if month is None else month_plan(plan, month)  # before the verifier
    except MonthRefused as error:
        raise _problem("command line", "--month", str(error)) from None
    # only a plan the verifier accepts is deployed (as report --plan and simulate): a
    # tampered count of 10^12 replicas hung the pools' queueing maths; the verifier
    # refuses it before any physics
    require_verified(instance, plan, plan_file, "deploy")
    try:
        files = deploy_files(instance, deployed, target)
    except DeployError as error:
        raise _problem(str(plan_file), "replicas", str(error)) from None
    inputs = (plan_file, instance_file)
    given = {path.resolve() for path in inputs}  # the plan and instance may sit there
    stale = [path for path in stale_files(out_dir, files) if path.resolve() not in given]
    if stale:  # kubectl apply -f and fleet-import of the folder would run them as this plan's
        raise InputError(
            [
                Issue(
                    str(path),
                    None,
                    "",
                    f"is not among the {counted(len(files), 'file')} this deploy writes "
                    f"(an earlier deploy's pool?); a folder read back whole (kubectl apply -f, "
                    "fleet-import) would take it as this plan's: remove it or give -o an "
                    "empty folder",
                )
                for path in stale
            ]
        )
    foreign = [path for path in foreign_files(out_dir, files) if path.resolve() not in given]
    if foreign:  # the user's own file of a name this deploy writes: never written over
        raise InputError(
            [
                Issue(
                    str(path),
                    None,
                    "",
                    "exists and was not written by fleetplan deploy (no 'written by "
                    "fleetplan deploy' mark); this deploy would write over it: move it or "
                    "give -o another folder",
                )
                for path in foreign
            ]
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # made unmakeable since `_unmakeable` looked
        raise _problem(str(out_dir), "-o", f"cannot be made: {error.strerror}") from None
    for name in files:
        check_target(out_dir / name, inputs)
    for name, text in files.items():
        write_text(out_dir / name, text, inputs)
    err.print(f"wrote {counted(len(files), 'file')} for {target} to {out_dir}", markup=False)
    if deployed.hours and target != "k8s":  # the day's hours were left out without a word
        err.print(
            f"note: {plan_file} plans the hours of a day: these files run each pool at its "
            "largest count of the day; the hours, what runs on reserved GPUs and what is "
            "rented, are not in them (--target k8s writes the schedule, "
            "fleetplan-schedule.yaml)",
            markup=False,
        )


def _unmakeable(out_dir: Path) -> str | None:
    """Why folder `out_dir` cannot be made (None: it can, or it is there): its nearest
    existing parent is a file, or a folder that cannot be written. `-o notes.txt/out`
    ended in an internal error (NotADirectoryError) after the plan was verified."""
    for folder in out_dir.absolute().parents:
        if folder.exists():
            if not folder.is_dir():
                return f"cannot be made: {folder} is a file, not a folder"
            if not out_dir.exists() and not os.access(folder, os.W_OK | os.X_OK):
                return f"cannot be made: folder {folder} is not writable"
            return None
    return None


def _fleet_files(folder: Path) -> list[Path]:
    """The YAML files of a fleet folder, by name."""
    return sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))


def fleet_import(
    fleet_file: Annotated[
        Path,
        typer.Argument(
            help="The running fleet: a CSV of pools, Kubernetes YAML, or a folder of it."
        ),
    ],
    instance_file: Annotated[
        Path, typer.Option("--instance", help="The instance whose regions own the fleet.")
    ],
    instance_out: Annotated[
        Path,
        typer.Option("--instance-out", help="Write the instance with `existing` set here."),
    ],
    plan_out: Annotated[
        Path | None,
        typer.Option(
            "--plan-out",
            help='Write the fleet as {"replicas": [...]} for verify (with an hourly '
            "plan's schedule, its hours, committed and months too).",
        ),
    ] = None,
) -> None:
    """Read a running fleet into an instance's existing GPUs and a plan `verify` judges.

    A CSV has one row per pool (workload, region, gpu, precision, tp, pp, replicas, and
    optionally kv_precision, ep, dp, role, speculative); Kubernetes YAML is what `deploy
    --target k8s` writes (normal and spare objects add up; an hourly plan's schedule
    ConfigMap gives the fleet its hours, commitments and months). Each region's `existing`
    becomes the GPUs the fleet holds there, so `solve` plans only what to add; a fleet
    with a schedule reserves and rents its GPUs, so `existing` stays as stated.
    """
    from solver.deploy.fleet_import import (
        FleetImportError,
        check_gpus,
        check_workloads,
        fleet_plan,
        owned_gpus,
        pools_from_csv,
        pools_from_objects,
        schedules_from_objects,
        with_existing,
    )

    # the folder `deploy --target k8s` wrote: each of its files is an input, never replaced
    files = _fleet_files(fleet_file) if fleet_file.is_dir() else [fleet_file]
    inputs = (fleet_file, instance_file, *files)
    # and never one file for both; the instance written may replace an instance file
    check_targets((instance_out, (plan_out, PLAN)), inputs, (instance_out,))
    if instance_out.suffix.lower() not in INSTANCE_SUFFIXES:  # written, it would not load
        raise _problem(
            "command line",
            "--instance-out",
            f"{instance_out}: an instance file is .yaml, .yml or .json, got "
            + (repr(instance_out.suffix) if instance_out.suffix else "no suffix"),
        )
    instance = load(instance_file, None, (instance_out, plan_out))  # valid before rewritten
    _check_earlier_import(instance_out, instance.name)
    # bounded as every input is (models.io.documents): a FIFO, a device, a binary file or
    # one over the size limit is refused, never waited on or read without end
    pools, schedules = [], []
    named: dict[tuple[str, str, str], str] = {}  # every object once, across the files
    for path in files:  # each file read and named on its own (lines are the file's)
        text = read_text(path, "fleet")
        try:
            if path.suffix.lower() == ".csv":
                pools += pools_from_csv(text)
            else:
                documents = yaml_documents(text, str(path))
                pools += pools_from_objects(documents, named, str(path))
                schedules += schedules_from_objects(documents)
        except FleetImportError as error:
            raise _problem(str(path), "", str(error)) from None
    try:
        plan = fleet_plan(pools, schedules)
    except FleetImportError as error:
        raise _problem(str(fleet_file), "", str(error)) from None
    document, _ = read_document(instance_file)
    try:
        check_workloads(pools, [workload.name for workload in instance.workloads])
        check_gpus(pools, [gpu.name for gpu in instance.gpus])
        # a schedule reserves and rents the fleet's GPUs hour by hour: they are not owned
        updated = with_existing(document, {} if schedules else owned_gpus(pools))
    except FleetImportError as error:
        raise _problem(str(fleet_file), "", str(error)) from None
    if not pools:
        raise _problem(
            str(fleet_file),
            "",
            "holds no pool (no row, or no object with the fleetplan.io/pool annotation)",
        )
    if not schedules and not any(pool.count for pool in pools):
        raise _problem(str(fleet_file), "replicas", _runs_nothing(pools))
    try:  # what is written must load: a fleet past a bound or of an undeclared GPU type
        validate_instance(updated, str(fleet_file), {}, instance_dir=instance_file.parent)
    except InputError as error:
        raise InputError(
            [
                replace(issue, message=f"{issue.message} (the fleet raises `existing`)")
                for issue in error.issues
            ]
        ) from None
    write_text(instance_out, instance_text(updated, instance_out), inputs, instance=True)
    err.print(f"wrote {instance_out}", markup=False)
    if schedules:
        err.print(
            f"{instance_out}: `existing` as the instance states it: the fleet runs its plan's "
            "schedule (reserved and rented GPUs, hour by hour), which verify judges",
            markup=False,
        )
    emit_json(plan_out, plan, inputs, PLAN)


def _runs_nothing(pools: list) -> str:
    """Why a fleet whose every pool states 0 replicas is refused as an empty one is: it
    holds no GPU, so it raises no region's `existing` and gives verify an empty plan; the
    instance written was the instance read (exit 0), where an empty CSV exited 2. A pool
    at 0 beside running ones is kept (a pool scaled to zero is a fleet's real state)."""
    shown = ", ".join(f"{p.workload} in {p.region} on {p.key}" for p in pools[:3])
    more = f" and {len(pools) - 3} more" if len(pools) > 3 else ""
    return (
        f"runs no replica: {counted(len(pools), 'pool')} ({shown}{more}), each with 0 "
        "replicas; a fleet that runs nothing owns no GPU to import: solve the instance as "
        "it is, or export the fleet again"
    )


def _check_earlier_import(instance_out: Path, name: str) -> None:
    """Refuse an existing `--instance-out` that is another instance than the one imported
    into (check_targets has refused one that is no instance): `fleet-import fleet.csv
    --instance chat.yaml --instance-out prod.yaml` wrote chat's instance over the user's
    hand-written prod instance, its comments and its own name gone. An earlier import
    into the same instance (its name) is replaced."""
    if not instance_out.is_file() or instance_out.stat().st_size == 0:
        return
    document, lines = read_document(instance_out)
    written = document.get("name") if isinstance(document, dict) else None
    if written != name:
        raise InputError(
            [
                Issue(
                    str(instance_out),
                    lines.get(("name",)),
                    "name",
                    f"holds the instance {written!r}, not an earlier import into {name!r}; "
                    "fleet-import writes over its own earlier output only: choose another "
                    "path, or remove the file first",
                )
            ]
        )
