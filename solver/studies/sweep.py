"""A sweep: one instance solved across a grid of changes, and the robust choice.

Every point of the grid (models/schema/sweep_grid.py) is validated here and solved in a worker
(`solve_point`, one solver thread each): a spawn-context process pool (`local`) or Ray
tasks (`ray`, an optional extra). Each result is one JSON record, streamed to a JSON
Lines file as it arrives, so a sweep that stops resumes where it was: a point whose key
is already in the file is not solved again.

The robust choice: every distinct plan the points produced (its replica pools, the
decisions) is checked by the independent verifier against every point's instance
(solver.verify.fleet), which recomputes its cost at that point's prices. A plan that serves
every point has a worst-case cost, the largest of those costs; the robust choice is the
plan with the smallest worst-case cost. It is only chosen among the points' own plans:
a plan none of the points would pick alone could be cheaper in the worst case, so the
answer is an upper bound on the truly robust cost (a joint program over all points
would give the bound's other side).
"""

import contextlib
import json
import math
import os
import stat
import time
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from models.io.documents import DuplicateKey, once_each
from models.io.loading import validate_instance
from models.schema import reading_limits
from models.schema.errors import InputError, Issue
from models.schema.instance import Instance
from models.schema.sweep_grid import MAX_POINTS, Grid, Point, point_document, shown_value
from solver.plan.records import Real, ReplicaPool, Whole
from solver.plan.schema import Plan
from solver.plan.time_records import Commitment, Hour, Month, known_status
from solver.studies.batch import solve_or_ending
from solver.time.reprice import at_prices
from solver.verify.hours import verify_any as verify
from solver.workers import process_pool

EXECUTORS = ("local", "ray")
STATED_FIGURES = ("cost_per_month", "limit", "requests_per_s_per_replica", "routing_weight")
"""Fields of a replica entry that are consequences at one point's prices and physics,
dropped before the plan is checked at another point (the verifier recomputes them)."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


def solve_point(instance: Instance, backend: str | None = None) -> dict[str, Any]:
    """Solve one point with one solver thread; every ending (a crash included) is a
    record: status, cost (month 0's, and over the horizon for a plan of months: None
    without), GPUs, run time and the plan's replica pools."""
    started = time.monotonic()

    def ended(status: str, message: str = "") -> dict[str, Any]:
        return {"status": status, "message": message, "runtime_s": time.monotonic() - started}

    try:
        plan, status, message = solve_or_ending(instance, backend, started)
    except Exception as error:  # one point's crash is its record, never the sweep's
        return ended("error", f"internal error ({type(error).__name__}: {error})")
    if plan is None:
        return ended(status, message)
    return {
        "status": "solved",
        "plan_status": plan.status,
        "mip_gap": plan.solver.mip_gap,  # the gap of "feasible (gap X%)" as a number
        "cost_per_month": plan.cost_per_month,
        "horizon_cost": plan.horizon_cost,
        "total_gpus": plan.total_gpus,
        "runtime_s": time.monotonic() - started,
        "message": "",
        "replicas": [r.model_dump(mode="json", exclude_none=True) for r in plan.replicas],
        **_time_parts(plan),
    }


TIME_PARTS = ("hours", "committed", "months", "cost_per_month")
"""What an hourly plan is beyond its peak pools: the verifier checks its 24 hours, its
commitments and its months (month 0 against the plan's cost; solver.verify.hours), not
the peak fleet alone. The idle shares are left out (they depend on each point's demand,
as the peak pools' STATED_FIGURES do); the dollars the hours, commitments and months
state, the spot pools' margins and the months' orders and power are restated at each
point's prices, spot terms, lead time and power terms before it is checked
(solver.time.reprice), as a static plan's stated costs are dropped, so a plan serves
every point its fleet serves."""

PRICE_FIGURES = (
    "cost",
    "cost_per_hour",
    "cost_per_month",
    "reserved_price_per_gpu_hour",
    "on_demand_price_per_gpu_hour",
    "down_fraction",
    "down_replicas",
    "order_month",
    "ordered_gpus",
    "servers_ordered",
    "power_kw",
)
"""Dollars an hourly plan's parts state at its own point's prices, its spot pools'
margins at its point's spot terms, its months' orders at its point's lead time and their
power at its point's power terms: not part of its identity (two points that price the
same hours differently, hold them to another spot confidence, order them earlier or draw
them at another PUE chose one plan)."""


def _time_parts(plan: Plan) -> dict[str, Any]:
    if not plan.hours:
        return {}
    return {
        "hours": [h.model_dump(mode="json", exclude_none=True) for h in plan.hours],
        "committed": [c.model_dump(mode="json", exclude_none=True) for c in plan.committed],
        "months": [
            m.model_dump(mode="json", exclude_none=True, exclude={"idle_fraction"})
            for m in plan.months
        ],
        "cost_per_month": plan.cost_per_month,
    }


# --- the results file -------------------------------------------------------------------


def read_results(path: Path | None) -> dict[str, dict[str, Any]]:
    """The records already in a JSON Lines results file, by point key; a line that does
    not parse (the end of a sweep killed mid-write, bytes that are not UTF-8, NaN or
    Infinity, a line over `MAX_DOCUMENT_BYTES`) is skipped and its point solved again.
    Only a regular file is read (a FIFO is never waited on), at most `MAX_POINTS`
    records' worth of lines. A file whose first line is not a record is refused (InputError):
    `--out plan.json` appended results to the plan."""
    if path is None or not path.is_file():
        return {}
    done: dict[str, dict[str, Any]] = {}
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return {}
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return {}
        if _someone_elses(handle.readline(_FIRST_LINE_BYTES)):
            raise InputError(
                [Issue(str(path), None, "--out", "is not a sweep results file (its first "
                       f"line does not start {RECORD_START.decode()}): the results would be "
                       "appended to it; give a new file or this sweep's results file")]
            )  # fmt: skip
        handle.seek(0)
        issues: list[Issue] = []
        for number in range(1, 2 * MAX_POINTS + 1):
            line = handle.readline(reading_limits.MAX_DOCUMENT_BYTES + 1)
            if not line:
                break
            try:
                record = json.loads(
                    line.decode("utf-8"), parse_constant=_not_json, object_pairs_hook=once_each
                )
            except DuplicateKey as twice:
                issues.append(Issue(str(path), number, str(twice.key), _TWICE))
                continue
            except (UnicodeDecodeError, ValueError, RecursionError):
                continue
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                issues += _misshapen(path, number, record)
                done[record["key"]] = record
    if issues:
        raise InputError(issues)
    return done


GRID = "grid"
"""The results line's field naming the grid that wrote it (`grid_name`)."""


def grid_name(grid_file: Path, results: Path) -> str:
    """The grid file as the results file's folder reaches it (`sweeps/a.yaml`, `a.yaml`):
    the same for the same grid wherever a checkout of both stands (a CI workspace), and
    for a grid edited in place."""
    try:
        return os.path.relpath(grid_file.resolve(), results.resolve().parent)
    except ValueError:  # another drive: no relative path
        return str(grid_file.resolve())


def refuse_other_grids(
    results: Path | None, done: dict[str, dict[str, Any]], grid: str | None
) -> None:
    """Refuse a results file holding another grid's records: its points share keys with
    this grid's (an axis alike, `demand_growth=1.0`) over other instances, so each sweep
    took the other's lines for stale versions of its own points, solved them again and
    appended after them, and neither resumed. Lines that name no grid (written before
    lines named theirs) are taken as this grid's."""
    others = sorted({r[GRID] for r in done.values() if isinstance(r.get(GRID), str)} - {grid})
    if results is None or not others:
        return
    lines = sum(1 for r in done.values() if r.get(GRID) == others[0])
    also = f" and {len(others) - 1} more" if len(others) > 1 else ""
    raise InputError(
        [Issue(str(results), None, "--out", f"holds the results of another grid "
               f"({shown_value(others[0])}, "
               f"{lines:,} points{also}); this grid's points share their keys, so each sweep "
               "would solve the other's again beside them: give each grid its own --out")]
    )  # fmt: skip


class ResultRecord(BaseModel):
    """What a results line holds that the sweep reads back (cli.sweep._record writes it):
    a line edited by hand to a cost that is a word, replicas that are not pools or a
    status no solve ends with reached the tables and the robust choice (exit 70, or a
    cost of $-5/month shown as the point's). The fields it does not read are kept as
    they are."""

    model_config = ConfigDict(extra="allow", frozen=True)

    point: Whole = Field(ge=0)
    key: str
    status: Literal["solved", "bad_input", "infeasible", "no_solution", "rejected", "error"]
    plan_status: Annotated[str, AfterValidator(known_status)] | None = None
    mip_gap: Real | None = Field(default=None, ge=0)
    cost_per_month: Real | None = Field(default=None, ge=0)
    horizon_cost: Real | None = Field(default=None, ge=0)
    total_gpus: Whole | None = Field(default=None, ge=0)
    runtime_s: Real | None = Field(default=None, ge=0)
    message: str = ""
    grid: str | None = None
    replicas: tuple[ReplicaPool, ...] = ()
    hours: tuple[Hour, ...] = ()
    committed: tuple[Commitment, ...] = ()
    months: tuple[Month, ...] = ()


def _said(item: Any) -> str:
    """A pydantic error on a results line with the value it refused (our own checks,
    `value_error`, show it already: 'must be a number, got the text 'cheap'')."""
    message = item["msg"].removeprefix("Value error, ")
    return message if item["type"] == "value_error" else f"{message} (got {_shown(item['input'])})"


def _misshapen(path: Path, number: int, record: dict[str, Any]) -> list[Issue]:
    """The fields of a results line (`ResultRecord`) that the sweep cannot read back,
    each named with its line and the remedy."""
    try:
        ResultRecord.model_validate(record)
    except ValidationError as error:
        return [
            Issue(
                str(path),
                number,
                ".".join(map(str, item["loc"])),
                f"{_said(item)}: "
                "not a line this sweep wrote; delete the line to solve its point again",
            )
            for item in error.errors()
        ]
    return []


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


RECORD_START = b'{"point": '
"""How every line of a results file starts (cli.sweep._record writes `point` first)."""


_FIRST_LINE_BYTES = 1 << 16
"""How much of a results file's first line is read to tell what the file is."""


def _someone_elses(first_line: bytes) -> bool:
    """Whether a file whose first line this is holds another document (a plan, an
    instance, a CSV, a disk image, a sparse file of zeros): anything that does not open
    with a record. Only an empty file and a record (or its start, cut by a killed run)
    are the sweep's to append to; a line after the first that does not parse is a
    damaged line of its own, and its point is solved again (`read_results`)."""
    line = first_line.rstrip(b"\r\n")
    cut = not first_line.endswith(b"\n") and RECORD_START.startswith(line)  # the file's end
    return not (not line or line.startswith(RECORD_START) or cut)


_TWICE = (
    "is given twice in the line, and JSON keeps the last without a word: not a line this "
    "sweep wrote; delete the line to solve its point again"
)


def _not_json(constant: str) -> float:
    """NaN and Infinity are not JSON: a line holding one is solved again (it would make
    the sweep's own JSON invalid)."""
    raise ValueError(f"{constant} is not a JSON number")


class ResultsFile:
    """Appends one record a line, flushed to disk each time (a killed sweep loses at most
    the line being written)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.handle = None
        if path is not None:
            ends_cleanly = not path.exists() or path.stat().st_size == 0
            if not ends_cleanly:
                with path.open("rb") as existing:
                    existing.seek(-1, 2)
                    ends_cleanly = existing.read(1) == b"\n"
            try:
                self.handle = path.open("a", encoding="utf-8")
            except OSError as error:
                message = f"cannot be written: {error.strerror}"
                raise InputError([Issue(str(path), None, "", message)]) from None
            if not ends_cleanly:
                self.handle.write("\n")  # a line cut by a killed run ends before ours

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line; a write that fails (a full disk, a quota, the file
        system gone) is an InputError naming the file, as every output's is
        (models.io.output_files), where it was an internal error (exit 70)."""
        if self.handle is None:
            return
        try:
            self.handle.write(json.dumps(record) + "\n")
            self.handle.flush()
        except OSError as error:
            message = (
                f"cannot be written: {error.strerror or error}; the points before this one "
                "are in it, and the same command resumes from them"
            )
            raise InputError([Issue(str(self.path), None, "--out", message)]) from None

    def close(self) -> None:
        """Close the file (what a failed write left buffered is dropped, not raised again)."""
        if self.handle is not None:
            with contextlib.suppress(OSError):
                self.handle.close()


# --- running the points ------------------------------------------------------------------


def point_instance(grid: Grid, point: Point) -> tuple[Instance | None, InputError | None]:
    """The validated instance of a point, or the error that makes it a bad point."""
    try:
        document = point_document(grid, point)
        instance = validate_instance(
            document, str(grid.instance_file), instance_dir=grid.instance_file.parent
        )
    except InputError as error:
        return None, error
    return instance, None


def run_points(
    work: list[tuple[Point, Instance]],
    executor: str = "local",
    jobs: int = 1,
    backend: str | None = None,
    on_done: Callable[[Point, dict[str, Any]], None] | None = None,
) -> dict[int, dict[str, Any]]:
    """Solve every (point, instance), `jobs` at a time; the records by point index, each
    passed to `on_done` as it arrives (in completion order)."""
    results: dict[int, dict[str, Any]] = {}

    def record(point: Point, result: dict[str, Any]) -> None:
        results[point.index] = result
        if on_done is not None:
            on_done(point, result)

    if executor == "ray":
        _run_on_ray(work, jobs, backend, record)
    elif jobs <= 1 or len(work) <= 1:
        for point, instance in work:
            record(point, solve_point(instance, backend))
    else:
        with process_pool(jobs) as pool:
            futures = {pool.submit(solve_point, inst, backend): point for point, inst in work}
            for future in as_completed(futures):
                try:
                    result = future.result()
                except Exception as error:  # the worker process died
                    result = {"status": "error", "message": f"worker failed: {error}"}
                record(futures[future], result)
    return results


def ray_available() -> bool:
    """Whether Ray can be imported (`pip install fleetplan[ray]`)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _run_on_ray(
    work: list[tuple[Point, Instance]],
    jobs: int,
    backend: str | None,
    record: Callable[[Point, dict[str, Any]], None],
) -> None:
    """Solve the points as Ray tasks (one CPU each) on the cluster `ray.init` finds, or a
    local one of `jobs` CPUs started here and shut down after."""
    if not ray_available():
        raise InputError(
            [Issue("--executor", None, "", "ray is not installed: pip install 'fleetplan[ray]'")]
        )
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(solve_point)
        pending = {task.remote(instance, backend): point for point, instance in work}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                point = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as error:  # the task's worker died
                    result = {"status": "error", "message": f"ray task failed: {error}"}
                record(point, result)
    finally:
        if started_here:
            ray.shutdown()


# --- the robust choice -------------------------------------------------------------------


class PlanCheck(BaseModel):
    """One distinct plan of the sweep, checked at every point."""

    model_config = _FROZEN

    plan: int
    """The plan's number (in order of the first point that chose it)."""
    chosen_at: tuple[int, ...]
    """Points whose own optimum it is."""
    serves: tuple[int, ...]
    """Points whose every requirement it meets (the verifier)."""
    fails: tuple[int, ...]
    """Points it does not serve."""
    cost_per_month: dict[int, float]
    """Its cost at each point's prices (GPUs bought x price x hours)."""
    worst_cost_per_month: float | None
    """Its largest cost over the points; None unless it serves every point."""
    horizon_cost: dict[int, float] | None = None
    """A plan of months: its cost over the horizon at each point's prices (the basis
    solve states and compare judges on); None for a plan without months."""
    worst_horizon_cost: float | None = None
    """Its largest horizon cost over the points; None unless it plans months and serves
    every point."""
    total_gpus: int
    failure: dict[int, str]
    """The first violation at each point it fails."""


def plan_key(replicas: list[dict[str, Any]]) -> str:
    """A plan's identity: its replica pools without the figures that depend on a point."""
    stripped = [{k: v for k, v in r.items() if k not in STATED_FIGURES} for r in replicas]
    return json.dumps(sorted(stripped, key=lambda r: json.dumps(r, sort_keys=True)), sort_keys=True)


def _untabled(part: Any) -> Any:
    """An hourly plan's part without its hours' scenario tables: each routes its own
    point's demand, so at another point the hour's max-flow judges the fleet instead
    (solver.verify.hour_scenarios), as the peak pools are judged without `scenarios`."""
    if isinstance(part, list):
        return [_untabled(item) for item in part]
    if isinstance(part, dict):
        return {k: _untabled(v) for k, v in part.items() if k != "scenarios"}
    return part


def _unpriced(part: Any) -> Any:
    """An hourly plan's part without the dollars it states (PRICE_FIGURES)."""
    if isinstance(part, list):
        return [_unpriced(item) for item in part]
    if isinstance(part, dict):
        return {k: _unpriced(v) for k, v in part.items() if k not in PRICE_FIGURES}
    return part


def check_plans(
    records: dict[int, dict[str, Any]], instances: dict[int, Instance]
) -> list[PlanCheck]:
    """Every distinct plan of the solved points, verified against every valid point."""
    plans: dict[str, list[int]] = {}
    parts_of: dict[str, dict[str, Any]] = {}
    for index in sorted(records):
        record = records[index]
        if record.get("status") != "solved":
            continue
        key = plan_key(record.get("replicas", []))
        unpriced = {n: _unpriced(record[n]) for n in TIME_PARTS[:3] if n in record}
        key += json.dumps(unpriced, sort_keys=True)
        plans.setdefault(key, []).append(index)
        timed = {n: _untabled(record[n]) for n in TIME_PARTS if n in record and "hours" in record}
        # an hourly plan is its hours: its peak pools state one point's figures, and the
        # hour verifier holds stated peak pools to the hours' (none stated: not checked)
        parts_of[key] = timed or {"replicas": json.loads(plan_key(record.get("replicas", [])))}
    checks = []
    for number, (key, chosen) in enumerate(plans.items()):
        plan = Plan.model_validate(parts_of[key])
        serves, fails, costs, failure = [], [], {}, {}
        horizons: dict[int, float] = {}
        total_gpus = 0
        for index, instance in sorted(instances.items()):
            priced = at_prices(instance, plan)
            result = verify(instance, priced)
            costs[index] = result.cost_per_month
            if priced.months:  # each month's cost is the verifier's to check at the point
                horizons[index] = math.fsum(m.cost_per_month for m in priced.months)
            total_gpus = result.total_gpus
            if result.ok:
                serves.append(index)
            else:
                fails.append(index)
                failure[index] = str(result.violations[0]) if result.violations else ""
        checks.append(
            PlanCheck(
                plan=number,
                chosen_at=tuple(chosen),
                serves=tuple(serves),
                fails=tuple(fails),
                cost_per_month=costs,
                worst_cost_per_month=None if fails else max(costs.values(), default=0.0),
                horizon_cost=horizons or None,
                worst_horizon_cost=None if fails or not horizons else max(horizons.values()),
                total_gpus=total_gpus,
                failure=failure,
            )
        )
    return checks


def robust_choice(checks: Iterable[PlanCheck]) -> PlanCheck | None:
    """The plan that serves every point at the smallest worst-case cost (None when no
    point's plan serves them all): over the horizon where every such plan plans months
    (as compare judges them), else per month."""
    robust = [c for c in checks if c.worst_cost_per_month is not None]
    if robust and all(c.worst_horizon_cost is not None for c in robust):
        return min(robust, key=lambda c: (c.worst_horizon_cost, c.plan))
    return min(robust, key=lambda c: (c.worst_cost_per_month, c.plan), default=None)
