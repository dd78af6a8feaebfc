"""A fleet as it runs, read back: plan replicas and the instance's `existing` GPUs.

Two inputs:
- a CSV of pools, one row per pool: `workload,region,gpu,precision,tp,pp,replicas` and
  optionally `kv_precision,ep,dp,role,speculative,redundant_experts` (header row
  required); a pool on two rows is refused naming both (summed, a row copied twice
  doubled the fleet unseen);
- Kubernetes objects (YAML, several documents): every Deployment or LeaderWorkerSet with
  the `fleetplan.io/pool` annotation (`solver.deploy.manifests`) is a pool of
  `spec.replicas`; a pool's normal object and its spare add up.

The result: the replicas (`solver.plan.records.ReplicaPool`, one per layout, counts summed)
as a fleet plan `{"replicas": [...]}` that `fleetplan verify` judges (with an hourly plan's
schedule, the ConfigMap `deploy` wrote beside the pools (`solver.deploy.schedule`), its
`hours`, `committed` and `months` too: judged hour by hour, as the plan was), and the GPUs they
hold per (region, GPU type) = sum of count x tp x pp x dp, which raise the regions'
`existing` fleet (never lower it: an owned GPU idle today is still owned) so that
`solve` plans only what to add. A fleet with a schedule does not raise it (cli.deploy):
its GPUs are the schedule's, reserved and rented hour by hour, and counted as owned too
they were paid twice (a months plan read back 'owns 8; existing 2 + committed 8').
"""

import csv
import io
import json
import math
from collections import defaultdict
from typing import Any

import yaml
from pydantic import ValidationError

from models.io.documents import DuplicateKey, once_each
from models.io.numbers import whole_number
from models.physics.catalog import closest_name
from solver.deploy.manifests import GPU_LABEL, POOL_ANNOTATION, REGION_LABEL
from solver.deploy.schedule import SCHEDULE_KEY, SCHEDULE_NAME, is_schedule
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan

CSV_REQUIRED = ("workload", "region", "gpu", "precision", "tp", "pp", "replicas")
CSV_OPTIONAL = ("kv_precision", "ep", "dp", "role", "speculative", "redundant_experts")
_INTEGERS = ("tp", "pp", "ep", "dp", "redundant_experts", "replicas")


class FleetImportError(ValueError):
    """A fleet file that cannot be read (names the row or object and the field)."""


def _unshown(item: dict) -> bool:
    """Whether a pydantic error leaves out the value it refused (our own checks, the
    `value_error`s, show it: 'must be a number, got the text '1'')."""
    return isinstance(item.get("input"), str | int) and item["type"] != "value_error"


def _pool(fields: dict, replicas: int, where: str) -> ReplicaPool:
    data = {k: v for k, v in fields.items() if v not in (None, "")}
    data["count"] = replicas
    try:
        pool = ReplicaPool.model_validate(data)
    except ValidationError as error:  # each field and what is wrong with it, in one line
        problems = "; ".join(  # the pool's count is the fleet's replicas (column, spec)
            f"{'.'.join(map(str, item['loc'])).replace('count', 'replicas') or 'the pool'}: "
            f"{item['msg'].removeprefix('Value error, ')}"
            + (f" (got {item['input']!r})" if _unshown(item) else "")
            for item in error.errors()
        )
        raise FleetImportError(f"{where}: {problems}") from None
    except ValueError as error:
        raise FleetImportError(f"{where}: {error}") from None
    return pool.model_copy(update={"gpus": pool.count * pool.replica_gpus})


def pools_from_csv(text: str) -> list[ReplicaPool]:
    """The pools of a CSV fleet (see the module text)."""
    # newline="": csv splits lines as universal newlines do (a CSV saved with CR endings
    # alone was an internal error) and keeps a line break inside a quoted field
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
    except csv.Error as error:  # a header past csv's 128 KiB field limit
        raise FleetImportError(f"CSV header: {error}") from None
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:  # csv keeps the last column of a name: the first would be lost unseen
        raise FleetImportError(f"CSV header: column {', '.join(twice)} given twice")
    missing = [name for name in CSV_REQUIRED if name not in header]
    unknown = [name for name in header if name not in CSV_REQUIRED + CSV_OPTIONAL]
    if missing or unknown:
        wrong = [
            f"{what} {', '.join(names)}"
            for what, names in (("missing", missing), ("unknown", unknown))
            if names
        ]
        raise FleetImportError(
            f"CSV header: {'; '.join(wrong)}; the columns are {', '.join(CSV_REQUIRED)} "
            f"and optionally {', '.join(CSV_OPTIONAL)}"
        )
    pools = []
    lines: dict[tuple, int] = {}
    rows: list[dict] = []
    try:
        rows.extend(reader)
    except csv.Error as error:  # a field past csv's 128 KiB, a NUL byte
        raise FleetImportError(f"row {len(rows) + 2}: {error}") from None
    for line, row in enumerate(rows, start=2):
        if None in row:
            raise FleetImportError(f"row {line}: more values than the header has columns")
        short = [name for name in header if row.get(name) is None]
        if short:  # csv fills the columns a short row lacks with None
            raise FleetImportError(
                f"row {line}: fewer values than the header has columns (none for "
                f"{', '.join(short)})"
            )
        blank = [name for name in CSV_REQUIRED if not row[name].strip()]
        if blank:
            raise FleetImportError(f"row {line}: {', '.join(blank)} is empty; give a value")
        fields = dict(row)
        for name in _INTEGERS:
            if fields.get(name) not in (None, ""):
                value = whole_number(fields[name])
                if value is None:
                    raise FleetImportError(
                        f"row {line}: {name} {fields[name]!r} is not a whole number"
                    )
                fields[name] = value
        replicas = fields.pop("replicas")
        pool = _pool(fields, replicas, f"row {line}")
        key = _layout(pool)
        if key in lines:
            raise FleetImportError(
                f"row {line}: the pool of {pool.workload} in {pool.region} on {pool.key} is "
                f"row {lines[key]} already; give each pool once, with all its replicas"
            )
        lines[key] = line
        pools.append(pool)
    return pools


def _layout(pool: ReplicaPool) -> tuple:
    """What makes a pool one (`merged` sums the counts of pools alike in it)."""
    return (pool.workload, pool.region, pool.key, pool.kv_precision)


def pools_from_kubernetes(text: str) -> list[ReplicaPool]:
    """The pools of Kubernetes objects written by `fleetplan deploy --target k8s`, as YAML
    text (`pools_from_objects` of its documents; the command line parses them with the
    bounded reader, models.io.documents.yaml_documents)."""
    return pools_from_objects(list(yaml.safe_load_all(text)))


def pools_from_objects(
    documents: list[Any], seen: dict[tuple[str, str, str], str] | None = None, source: str = ""
) -> list[ReplicaPool]:
    """The pools of parsed Kubernetes objects: every Deployment or LeaderWorkerSet with
    the pool annotation. An object of the wrong shape (metadata, annotations or spec not
    a mapping, an annotation that is not a JSON object) raises FleetImportError naming
    it, and so does one given twice (its kind, namespace and name among `seen`, the
    objects of the files read before, each where it was, `source` naming this file):
    Kubernetes runs one object of each, and its replicas were counted twice."""
    seen = {} if seen is None else seen
    pools = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or document.get("kind") not in (
            "Deployment",
            "LeaderWorkerSet",
        ):
            continue
        where = f"document {index} ({document['kind']})"
        metadata = _mapping(document.get("metadata"), where, "metadata")
        where = f"document {index} ({document['kind']} {metadata.get('name', '?')})"
        annotations = _mapping(metadata.get("annotations"), where, "metadata.annotations")
        annotation = annotations.get(POOL_ANNOTATION)
        if annotation is None:
            continue
        if isinstance(metadata.get("name"), str):
            key = (document["kind"], str(metadata.get("namespace") or "default"), metadata["name"])
            if key in seen:
                raise FleetImportError(
                    f"{where}: given before as {seen[key]}: Kubernetes runs one object of a "
                    "kind and name in a namespace; remove the copy"
                )
            seen[key] = f"{source} document {index}".strip()
        try:
            layout = _json(annotation) if isinstance(annotation, str) else None
        except json.JSONDecodeError as error:
            raise FleetImportError(f"{where}: {POOL_ANNOTATION} is not JSON: {error}") from None
        except _UnreadJson as error:
            raise FleetImportError(f"{where}: {POOL_ANNOTATION} {error}") from None
        if not isinstance(layout, dict):
            raise FleetImportError(
                f"{where}: {POOL_ANNOTATION} is not a JSON object of the pool's layout"
            )
        replicas = _mapping(document.get("spec"), where, "spec").get("replicas", 1)
        if not isinstance(replicas, int) or replicas < 0:
            raise FleetImportError(f"{where}: spec.replicas {replicas!r} is not a count")
        pool = _pool(layout, replicas, where)
        _runs_as_annotated(document, pool, where)
        pools.append(pool)
    return pools


def _runs_as_annotated(document: dict, pool: ReplicaPool, where: str) -> None:
    """Refuse an object whose pods run otherwise than its annotation lays out: the GPUs
    a replica's pods hold (`nvidia.com/gpu`; a LeaderWorkerSet's leader and its size - 1
    workers, the last node's GPUs in part spare) and the nodes they select
    (`REGION_LABEL`, `GPU_LABEL`). fleet-import read the annotation alone: a Deployment
    edited to twice the GPUs a pod, or onto another region's nodes, was read as the plan
    wrote it. A figure the object leaves out is not checked."""
    spec = _mapping(document.get("spec"), where, "spec")
    if document["kind"] == "Deployment":
        template = _mapping(spec.get("template"), where, "spec.template")
        pods = [(_mapping(template.get("spec"), where, "spec.template.spec"), 1)]
    else:
        group = _mapping(spec.get("leaderWorkerTemplate"), where, "spec.leaderWorkerTemplate")
        size = group.get("size", 1)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise FleetImportError(f"{where}: leaderWorkerTemplate.size {size!r} is not a count")
        pods = [
            (_mapping(_mapping(group.get(name), where, name).get("spec"), where, name), count)
            for name, count in (("leaderTemplate", 1), ("workerTemplate", size - 1))
            if count
        ]
    annotated = f"its {POOL_ANNOTATION} annotation"
    for pod, _ in pods:
        selector = _mapping(pod.get("nodeSelector"), where, "nodeSelector")
        for label, stated in ((REGION_LABEL, pool.region), (GPU_LABEL, pool.gpu)):
            if label in selector and selector[label] != stated:
                found = f"its pods select {label} {selector[label]}, {annotated} says {stated}"
                raise FleetImportError(f"{where}: {found}: fix the one that is wrong")
    held = [(_pod_gpus(pod, where), count) for pod, count in pods]
    if any(gpus is None for gpus, _ in held):
        return
    total = sum(gpus * count for gpus, count in held)
    need = pool.replica_gpus
    whole = total == need if len(pods) == 1 else total >= need > total - held[-1][0]
    if not whole:
        raise FleetImportError(
            f"{where}: its pods hold {total} GPUs a replica (nvidia.com/gpu), {annotated} "
            f"lays out {need} (tp {pool.tp} x pp {pool.pp} x dp {pool.dp}): fix the one "
            "that is wrong"
        )


def _pod_gpus(pod: dict, where: str) -> int | None:
    """The GPUs a pod's containers hold (their `nvidia.com/gpu` limits, else requests);
    None when no container states one."""
    containers = pod.get("containers")
    if not isinstance(containers, list):
        return None
    stated = []
    for container in containers:
        if not isinstance(container, dict):
            continue
        resources = _mapping(container.get("resources"), where, "resources")
        for kind in ("limits", "requests"):  # a list here ended in exit 70 (AttributeError)
            value = _mapping(resources.get(kind), where, f"resources.{kind}").get("nvidia.com/gpu")
            if value is not None:
                count = whole_number(str(value))
                if count is None:
                    raise FleetImportError(
                        f"{where}: nvidia.com/gpu {value!r} is not a whole number"
                    )
                stated.append(count)
                break
    return sum(stated) if stated else None


def _mapping(value: object, where: str, field: str) -> dict:
    """`value` when it is a mapping, {} when absent; anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FleetImportError(f"{where}: {field} is not a mapping")
    return value


def merged(pools: list[ReplicaPool]) -> tuple[ReplicaPool, ...]:
    """One pool per layout (workload, region, configuration), counts summed, empty ones
    dropped."""
    counts: dict[tuple, int] = defaultdict(int)
    first: dict[tuple, ReplicaPool] = {}
    for pool in pools:
        key = _layout(pool)
        counts[key] += pool.count
        first.setdefault(key, pool)
    return tuple(
        first[key].model_copy(update={"count": n, "gpus": n * first[key].replica_gpus})
        for key, n in counts.items()
        if n > 0
    )


def check_workloads(pools: list[ReplicaPool], names: list[str]) -> None:
    """Every workload the fleet serves is one of the instance's `names`.

    Raises:
        FleetImportError: a pool serves a workload the instance lacks (its GPUs would
            raise `existing` and its replicas reach verify as a workload no one declared).
    """
    unknown = sorted({w for pool in pools for w in pool.workloads or [pool.workload]} - set(names))
    if unknown:
        raise FleetImportError(
            f"the fleet serves workloads the instance lacks: {_quoted(unknown)} "
            f"(instance workloads: {_quoted(names)})"
        )


def check_gpus(pools: list[ReplicaPool], names: list[str]) -> None:
    """Every GPU type the fleet runs is one of the instance's `gpus[]` (`names`).

    Raises:
        FleetImportError: a pool runs on a GPU type the instance does not offer, named as
            the fleet spells it (the instance's `existing` would otherwise be refused
            under a field of the instance the user never wrote).
    """
    unknown = sorted({pool.gpu for pool in pools} - set(names))
    if unknown:
        close = [
            f"{match!r} for {_quoted([name])}"
            for name in unknown[:QUOTED_NAMES]  # those the message names
            if (match := closest_name(name, names))
        ]
        raise FleetImportError(
            f"the fleet runs GPU types the instance does not offer: {_quoted(unknown)} "
            f"(instance gpus: {_quoted(names)})"
            + (f"; did you mean {', '.join(close)}?" if close else "")
        )


class _UnreadJson(ValueError):
    """JSON giving one key twice in an object (json.loads keeps the last, silently), or
    nested past what json.loads follows (its RecursionError named no object)."""


def _json(text: str) -> Any:
    """`text` parsed as JSON, a key given twice in one object (models.io.documents' one
    check, `once_each`) or nesting too deep to read refused (`_UnreadJson`)."""
    try:
        return json.loads(text, object_pairs_hook=once_each)
    except DuplicateKey as twice:
        raise _UnreadJson(
            f"gives {twice.key!r} twice: the second would silently replace the first"
        ) from None
    except RecursionError:
        raise _UnreadJson("nests lists or objects deeper than JSON can be read") from None


QUOTED_NAMES = 10
"""Names a message lists before '... and N more'."""
QUOTED_CHARS = 80
"""Characters of a name a message shows before cutting it with '...'."""


def _quoted(names: list[str]) -> str:
    """Names as the messages list them, quoted so that a space or an empty name shows: at
    most `QUOTED_NAMES`, each cut at `QUOTED_CHARS` (130 rows of GPUs named with 60,000
    characters each made a 7.8 MB message)."""
    shown = []
    for name in names[:QUOTED_NAMES]:
        text = repr(name)
        shown.append(text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 3] + "...")
    more = len(names) - QUOTED_NAMES
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


def schedules_from_objects(documents: list[Any]) -> list[dict]:
    """The schedules among parsed Kubernetes objects (`solver.deploy.schedule`): each
    ConfigMap with the schedule annotation, its `schedule.json` parsed.

    Raises:
        FleetImportError: a schedule without its data or whose data is not a JSON object.
    """
    found = []
    for index, document in enumerate(documents):
        if not is_schedule(document):
            continue
        where = f"document {index} (ConfigMap {document['metadata'].get('name', '?')})"
        text = _mapping(document.get("data"), where, "data").get(SCHEDULE_KEY)
        if not isinstance(text, str):
            raise FleetImportError(f"{where}: data.{SCHEDULE_KEY} is missing")
        try:
            schedule = _json(text)
        except json.JSONDecodeError as error:
            raise FleetImportError(f"{where}: data.{SCHEDULE_KEY} is not JSON: {error}") from None
        except _UnreadJson as error:
            raise FleetImportError(f"{where}: data.{SCHEDULE_KEY} {error}") from None
        if not isinstance(schedule, dict):
            raise FleetImportError(f"{where}: data.{SCHEDULE_KEY} is not a JSON object")
        if (at := _not_finite(schedule)) is not None:
            raise FleetImportError(
                f"{where}: data.{SCHEDULE_KEY}: {at} is not a finite number (every number "
                "of a plan is; 1e999, Infinity and NaN are not)"
            )
        found.append(schedule)
    return found


def _not_finite(value: Any) -> str | None:
    """The path (`hours[1].cost_per_hour`) of the first number in parsed JSON that is not
    finite, None when all are: a schedule's 1e999 read as inf and was written to the
    plan-out as null (and a mip_gap of inf as no gap, which verify then passed)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path or "the value"
        if isinstance(item, dict):
            pairs = [(f"{path}.{key}" if path else str(key), sub) for key, sub in item.items()]
        elif isinstance(item, list):
            pairs = [(f"{path}[{index}]", sub) for index, sub in enumerate(item)]
        else:
            continue
        stack.extend(reversed(pairs))
    return None


def fleet_plan(pools: list[ReplicaPool], schedules: list[dict] | None = None) -> Plan:
    """The running fleet as a plan (what `verify` judges): its replicas, and the hours,
    commitments and months of its schedule when it has one.

    Raises:
        FleetImportError: more than one schedule, or one that is not a plan's.
    """
    schedules = schedules or []
    if len(schedules) > 1:
        raise FleetImportError(
            f"{len(schedules)} {SCHEDULE_NAME} ConfigMaps; a fleet runs one plan's schedule"
        )
    timed = schedules[0] if schedules else {}
    unknown = sorted(set(timed) - {"hours", "committed", "months"})
    if unknown:
        raise FleetImportError(f"{SCHEDULE_NAME}: unknown key {', '.join(unknown)}")
    try:
        return Plan.model_validate({**timed, "replicas": merged(pools)})
    except ValidationError as error:
        item = error.errors()[0]
        where = ".".join(map(str, item["loc"])) or "the schedule"
        raise FleetImportError(
            f"{SCHEDULE_NAME}: {where}: {item['msg'].removeprefix('Value error, ')}"
        ) from None


def owned_gpus(pools: list[ReplicaPool]) -> dict[str, dict[str, int]]:
    """{region: {gpu: GPUs held}}: sum of count x tp x pp x dp."""
    owned: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pool in merged(pools):
        owned[pool.region][pool.gpu] += pool.count * pool.replica_gpus
    return {region: dict(gpus) for region, gpus in owned.items()}


def with_existing(document: dict, owned: dict[str, dict[str, int]]) -> dict:
    """The instance document (as loaded from YAML) with each region's `existing` of a GPU
    type raised to the GPUs the fleet holds there: max(stated, held), since owned GPUs
    that run nothing today are still owned; other GPU types' entries are kept.

    Raises:
        FleetImportError: the fleet runs in a region the instance does not have.
    """
    regions = document.get("regions") or []
    names = {region.get("name") for region in regions if isinstance(region, dict)}
    unknown = sorted(set(owned) - names)
    if unknown:
        raise FleetImportError(
            f"the fleet runs in regions the instance lacks: {_quoted(unknown)} "
            f"(instance regions: {_quoted(sorted(map(str, names)))})"
        )
    updated = []
    for region in regions:
        held = owned.get(region.get("name"), {})
        if held:
            stated = region.get("existing") or {}
            raised = {gpu: max(stated.get(gpu, 0), count) for gpu, count in held.items()}
            region = {**region, "existing": {**stated, **raised}}
        updated.append(region)
    return {**document, "regions": updated}
