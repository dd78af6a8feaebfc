"""`fleetplan sweep`: an instance solved across a grid of changes; the cost surface and
the plan that is cheapest in the worst case.

Exit codes: 0 the sweep ran (whatever each point's status: it is data); 1 no plan of
the sweep serves every point (no robust choice); 2 the grid, its base instance or an
output path is unusable (nothing was solved).
"""

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.exit_codes import ExitCode
from cli.options import (
    Executor,
    JsonOut,
    capped_at_cores,
    check_not_read_by,
    emit_json,
    known_backend,
    ray_installed,
    to_stdout,
)
from cli.render.console import err, out
from cli.render.tables import TableSpec, print_tables
from models.io.output_files import check_targets, one_line
from models.io.output_kinds import JSON
from models.schema.errors import InputError, Issue
from models.schema.quantities import counted


def sweep(
    grid_file: Annotated[Path, typer.Argument(help="Grid file (.yaml): base instance and axes.")],
    executor: Annotated[
        Executor,
        typer.Option(
            help="local: a process pool; ray: Ray tasks (the fleetplan\\[ray] extra).",
            callback=ray_installed,  # before the grid is read or --out is opened
        ),
    ] = Executor.local,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", min=1, help="Points solved at once.", callback=capped_at_cores
        ),
    ] = 1,
    results: Annotated[
        Path | None,
        typer.Option(
            "--out", help="JSON Lines file: one line per point, appended as each ends; resumes."
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="Solver backend for every point.", callback=known_backend)
    ] = None,
    json_out: JsonOut = None,
) -> None:
    """Solve an instance across a grid of changes; report the cost surface and the robust
    choice (the plan cheapest in the worst case over the grid).

    A point already in the --out file is not solved again (the sweep resumes), unless
    its instance changed since (each line holds the instance's SHA-256). Every
    distinct plan is re-checked by the verifier at every point, at that point's prices.
    """
    from models.schema.sweep_grid import read_grid
    from solver.studies.sweep import (
        ResultsFile,
        check_plans,
        grid_name,
        point_instance,
        read_results,
        refuse_other_grids,
        robust_choice,
        run_points,
    )

    grid = read_grid(grid_file)
    inputs = (grid_file, grid.instance_file)  # the base instance is an input too
    check_targets((results, (json_out, JSON)), inputs)
    done = read_results(results)
    grid_id = None if results is None else grid_name(grid_file, results)
    refuse_other_grids(results, done, grid_id)
    records: dict[int, dict[str, Any]] = {}
    instances = {}
    prints: dict[int, str | None] = {}
    stale = resumed = 0
    work = []
    bad: dict[int, InputError] = {}
    for point in grid.points:
        instance, problem = point_instance(grid, point)
        prints[point.index] = None if instance is None else fingerprint(instance)
        if instance is not None:
            instances[point.index] = instance
        earlier = done.get(point.key)
        if earlier is not None and earlier.get(FINGERPRINT) != prints[point.index]:
            stale += 1  # solved for another instance, prices or catalog: solve it again
            earlier = None
        if earlier is not None:
            records[point.index] = {**earlier, "point": point.index}
            resumed += 1
        elif instance is None:
            bad[point.index] = problem
            records[point.index] = _record(
                point,
                {"status": "bad_input", "message": str(problem)},
                prints[point.index],
                grid_id,
            )
        else:
            work.append((point, instance))
    for instance in instances.values():  # a point may read another profile (an axis)
        check_not_read_by(instance, (results, json_out))
    if stale:
        err.print(
            f"{results}: {counted(stale, 'result')} solved for another version of the instance "
            "(its file, the grid's set or the catalog changed); solving them again",
            markup=False,
        )
    if instances:  # what is probably unintended in the instance (the first valid point's)
        from cli.options import print_warnings
        from models.schema.checks import input_warnings

        print_warnings(input_warnings(instances[min(instances)]))
    if len(bad) == len(grid.points):  # nothing to sweep: the base instance, not a point
        intro = f"no point is a valid instance; {grid.points[0].label}:"
        raise InputError([Issue(str(grid_file), None, "", intro), *bad[0].issues])
    for index, problem in bad.items():  # each bad point says why, as solved points do
        why = " ".join(str(problem).split())
        err.print(f"  {one_line(grid.points[index].label)}: bad_input: {why}", markup=False)
    console = err if to_stdout(json_out) else out
    err.print(
        f"{grid_file}: {counted(len(grid.points), 'point')}, {len(work)} to solve"
        + (f" ({resumed} already in {results})" if resumed else "")
        + f" on {executor.value} x {jobs}",
        markup=False,
    )
    sink = ResultsFile(results)
    for index, record in records.items():  # bad points go to the file too
        if grid.points[index].key not in done:
            sink.append(record)

    def arrived(point, result: dict[str, Any]) -> None:
        record = _record(point, result, prints[point.index], grid_id)
        records[point.index] = record
        sink.append(record)
        cost, horizon = result.get("cost_per_month"), result.get("horizon_cost")
        err.print(
            f"  [{len(records)}/{len(grid.points)}] {one_line(point.label)}: {result['status']}"
            + ("" if cost is None else f", ${cost:,.0f}/month")
            + ("" if horizon is None else f", ${horizon:,.0f} over the horizon"),
            markup=False,
        )

    try:
        run_points(work, executor.value, jobs, backend, arrived)
    finally:
        sink.close()
    solved = {i: instances[i] for i, r in records.items() if r.get("status") == "solved"}
    checks = check_plans(records, solved)
    robust = robust_choice(checks)
    tables = [_surface(grid, records), *_matrix(grid, records), _plans(checks)]
    header = [f"{grid_file}: sweep of {grid.instance_file.name} over {' x '.join(grid.axes)}"]
    header.append(_robust_line(robust, len(solved)))
    print_tables(header, tables, console=console)
    emit_json(
        json_out,
        {
            "grid": str(grid_file),
            "instance": str(grid.instance_file),
            "axes": list(grid.axes),
            "points": [
                {k: v for k, v in records[i].items() if k != "replicas"} for i in sorted(records)
            ],
            "plans": [check.model_dump(mode="json") for check in checks],
            "robust": None if robust is None else robust.plan,
            "robust_replicas": None if robust is None else _replicas(records, robust),
        },
        inputs,
    )
    if robust is None:
        raise typer.Exit(ExitCode.CHECK_FAILED)


FINGERPRINT = "instance_sha256"
"""The results line's field holding `fingerprint` of the point's instance."""


def fingerprint(instance) -> str:
    """SHA-256 of the point's validated instance (every price, rate and catalog entry it
    holds): a results line is reused on resume only for the same instance."""
    return hashlib.sha256(instance.model_dump_json().encode("utf-8")).hexdigest()


def _record(
    point, result: dict[str, Any], instance_print: str | None, grid_id: str | None
) -> dict[str, Any]:
    """A results line: the point, its changes, its grid, the instance's fingerprint, then
    what solving it gave."""
    from solver.studies.sweep import GRID

    return {
        "point": point.index,
        "key": point.key,
        "set": dict(point.values),
        GRID: grid_id,
        FINGERPRINT: instance_print,
        **result,
    }


def _replicas(records: dict[int, dict[str, Any]], check) -> list:
    return records[check.chosen_at[0]].get("replicas", [])


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _surface(grid, records: dict[int, dict[str, Any]]) -> TableSpec:
    """Every point: its axis values, status, cost and GPUs; where a point plans months,
    its cost over the horizon too (month 0's $/month alone hides what growth, lead time
    or a reserved price changes later: solve states both)."""
    from models.schema.sweep_grid import shown_value

    months = any(records[p.index].get("horizon_cost") is not None for p in grid.points)
    notes = ["axes: " + "; ".join(f"{_short(a)} = {a}" for a in grid.axes)]
    if not any(_short(a) != a for a in grid.axes):
        notes = []
    if months:
        notes.append("$/month: month 0's; horizon $: the months' sum (solve's 'over N months')")
    return TableSpec(
        "Cost surface (one row per point)",
        ("#", *(_short(a) for a in grid.axes), "status", "$/month")
        + (("horizon $",) if months else ())
        + ("GPUs",),
        tuple(
            (
                str(point.index),
                *(shown_value(value) for _, value in point.values),
                str(records[point.index].get("status", "-")),
                _money(records[point.index].get("cost_per_month")),
                *((_money(records[point.index].get("horizon_cost")),) if months else ()),
                str(records[point.index].get("total_gpus", "-")),
            )
            for point in grid.points
        ),
        "; ".join(notes),
    )


def _matrix(grid, records: dict[int, dict[str, Any]]) -> list[TableSpec]:
    """For a two-axis grid, the cost as a matrix: rows the first axis, columns the second;
    where the points plan months, their cost over the horizon (month 0's $/month is the
    same at every growth, lead time or later price: the surface's 'horizon $')."""
    from models.schema.sweep_grid import shown_value

    if len(grid.axes) != 2:
        return []
    months = any(records[p.index].get("horizon_cost") is not None for p in grid.points)
    field, what = ("horizon_cost", "horizon $") if months else ("cost_per_month", "$/month")
    first, second = grid.axes
    columns = _distinct(p.values[1][1] for p in grid.points)
    rows = []
    for row_value in _distinct(p.values[0][1] for p in grid.points):
        cells = [shown_value(row_value)]
        for column_value in columns:
            point = next(
                p
                for p in grid.points
                if p.values[0][1] == row_value and p.values[1][1] == column_value
            )
            cells.append(_money(records[point.index].get(field)))
        rows.append(tuple(cells))
    return [
        TableSpec(
            f"{what}: {_short(first)} (rows) x {_short(second)} (columns)",
            (_short(first), *(shown_value(c) for c in columns)),
            tuple(rows),
        )
    ]


def _distinct(values: Iterable[Any]) -> list[Any]:
    """Each value once, in order, compared by equality: an axis value may be a list or a
    mapping (a whole `hourly_profile`), which `dict.fromkeys` refused with 'unhashable
    type: list' (exit 70 after every point was solved)."""
    found: list[Any] = []
    for value in values:
        if value not in found:
            found.append(value)
    return found


def _plans(checks) -> TableSpec:
    """Each distinct plan: where it is optimal, where it serves, its worst-case cost (and
    over the horizon for plans of months, the basis the robust choice takes)."""
    months = any(c.horizon_cost for c in checks)
    return TableSpec(
        "Plans checked at every point (verifier, at each point's prices)",
        ("plan", "GPUs", "optimal at", "serves", "worst $/month")
        + (("worst horizon $",) if months else ()),
        tuple(
            (
                str(c.plan),
                str(c.total_gpus),
                ", ".join(map(str, c.chosen_at)),
                f"{len(c.serves)}/{len(c.serves) + len(c.fails)}",
                _money(c.worst_cost_per_month),
                *((_money(c.worst_horizon_cost),) if months else ()),
            )
            for c in checks
        ),
        "worst $/month only for a plan that serves every point"
        + ("; plans of months are chosen on their worst horizon cost" if months else ""),
    )


def _robust_line(robust, points: int) -> str:
    if robust is None:
        return f"no plan of the sweep serves all {points} solved points: no robust choice"
    return (
        f"robust choice: plan {robust.plan} ({counted(robust.total_gpus, 'GPU')}, optimal at "
        f"{'point' if len(robust.chosen_at) == 1 else 'points'} "
        f"{', '.join(map(str, robust.chosen_at))}) serves all {points} points; worst case "
        f"{_money(robust.worst_cost_per_month)}/month"
        + (
            ""
            if robust.worst_horizon_cost is None
            else f", {_money(robust.worst_horizon_cost)} over the horizon"
        )
    )


def _short(axis: str) -> str:
    """The last step of an axis path (a column header that fits)."""
    return axis.rsplit(".", 1)[-1]
