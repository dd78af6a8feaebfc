"""A folder of instances solved side by side and compared with their golden results.

Each `NAME.yaml` (or `.yml`, `.json`) in the folder may have a golden file
`NAME.expected.json` beside it. A check compares, for every instance:

- status (optimal/feasible count as `solved`; infeasible; no_solution; bad_input),
- cost per month, within the golden file's relative tolerance,
- the set of binding constraint families,

and requires the independent verifier to accept every plan. GPUs by type and region are
recorded in the golden file and reported when they change, but alternative optima with
the same cost may legitimately move GPUs between equal-priced options, so they are not a
regression on their own.

Workers get the validated instance (never a built solver model, which does not pickle)
and solve with one solver thread each, in a spawn-context process pool.
"""

import json
import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from models.errors import InputError, Issue
from models.instance import Instance
from models.loading import load_instance
from solver.errors import Infeasible, NoSolution, PlanRejected
from solver.settings import SolveSettings
from solver.solve import solve
from solver.verify_hours import verify_any as verify

GOLDEN_SUFFIX = ".expected.json"
INSTANCE_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_COST_TOLERANCE = 0.005
"""Relative cost change (0.5%) that a golden file tolerates unless it says otherwise."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class Outcome(BaseModel):
    """What solving one instance file produced."""

    model_config = _FROZEN

    file: str
    instance: str = ""
    status: str
    """solved | infeasible | no_solution | bad_input | rejected"""
    cost_per_month: float | None = None
    total_gpus: int | None = None
    gpus: dict[str, dict[str, int]] = Field(default_factory=dict)
    """{gpu: {region: GPUs used}}"""
    binding_families: tuple[str, ...] = ()
    verified: bool = False
    runtime_s: float = 0.0
    message: str = ""


class Golden(BaseModel):
    """The frozen expected result of one instance (`NAME.expected.json`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: str
    cost_per_month: float | None = None
    cost_rel_tolerance: float = Field(default=DEFAULT_COST_TOLERANCE, ge=0)
    total_gpus: int | None = None
    gpus: dict[str, dict[str, int]] = Field(default_factory=dict)
    binding_families: tuple[str, ...] = ()

    @classmethod
    def of(cls, outcome: Outcome, tolerance: float = DEFAULT_COST_TOLERANCE) -> "Golden":
        """The golden record of an outcome (what `--update` writes)."""
        return cls(
            status=outcome.status,
            cost_per_month=None
            if outcome.cost_per_month is None
            else round(outcome.cost_per_month, 2),
            cost_rel_tolerance=tolerance,
            total_gpus=outcome.total_gpus,
            gpus=outcome.gpus,
            binding_families=outcome.binding_families,
        )


class Comparison(BaseModel):
    """One instance checked against its golden file."""

    model_config = _FROZEN

    outcome: Outcome
    golden: Golden | None
    regressions: tuple[str, ...] = ()
    """What changed in a way that fails the check."""
    notes: tuple[str, ...] = ()
    """What changed without failing it (GPU moves at equal cost)."""

    @property
    def ok(self) -> bool:
        """No regression."""
        return not self.regressions


def instance_files(folder: Path) -> list[Path]:
    """The instance files of a folder, sorted by name (golden files excluded)."""
    if not folder.is_dir():
        raise _input_error(folder, "is not a folder of instance files")
    return sorted(
        path
        for path in folder.iterdir()
        if path.is_file()
        and path.suffix.lower() in INSTANCE_SUFFIXES
        and not path.name.endswith(GOLDEN_SUFFIX)
    )


def _input_error(path: Path, message: str) -> InputError:
    """An InputError about one path."""
    return InputError([Issue(str(path), None, "", message)])


def golden_path(instance_file: Path) -> Path:
    """`NAME.expected.json` beside `NAME.yaml`."""
    return instance_file.with_name(instance_file.stem + GOLDEN_SUFFIX)


def solve_one(file: str, instance: Instance | None, backend: str | None) -> Outcome:
    """Solve and verify one instance; every way it can end becomes an Outcome."""
    if instance is None:
        try:
            instance = load_instance(file)
        except InputError as error:
            return Outcome(file=file, status="bad_input", message=str(error))
    settings = SolveSettings.of(instance, backend=backend, threads=1)
    try:
        plan = solve(instance, settings)
    except Infeasible as error:
        return Outcome(file=file, instance=instance.name, status="infeasible", message=str(error))
    except NoSolution as error:
        return Outcome(file=file, instance=instance.name, status="no_solution", message=str(error))
    except PlanRejected as error:
        return Outcome(file=file, instance=instance.name, status="rejected", message=str(error))
    check = verify(instance, plan)
    return Outcome(
        file=file,
        instance=instance.name,
        status="solved",
        cost_per_month=plan.cost_per_month,
        total_gpus=plan.total_gpus,
        gpus=plan.gpus_by_type_and_region(),
        binding_families=tuple(sorted({b.family for b in plan.binding})),
        verified=check.ok,
        runtime_s=plan.solver.runtime_s if plan.solver else 0.0,
        message="" if check.ok else "; ".join(str(v) for v in check.violations),
    )


def run_batch(
    files: Iterable[Path],
    jobs: int = 1,
    backend: str | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Solve every file, `jobs` at a time, in input order.

    Files are loaded and validated here; a file that fails validation becomes a
    `bad_input` outcome without reaching a worker.
    """
    files = list(files)
    work: list[tuple[str, Instance | None]] = []
    outcomes: dict[str, Outcome] = {}
    for path in files:
        try:
            work.append((str(path), load_instance(path)))
        except InputError as error:
            outcomes[str(path)] = Outcome(file=str(path), status="bad_input", message=str(error))
            if on_done:
                on_done(outcomes[str(path)])
    if jobs <= 1 or len(work) <= 1:
        for file, instance in work:
            outcomes[file] = solve_one(file, instance, backend)
            if on_done:
                on_done(outcomes[file])
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {
                pool.submit(solve_one, file, instance, backend): file for file, instance in work
            }
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[futures[future]] = outcome
                if on_done:
                    on_done(outcome)
    return [outcomes[str(path)] for path in files if str(path) in outcomes]


def read_golden(instance_file: Path) -> Golden | None:
    """The golden result beside an instance file, or None when there is none."""
    path = golden_path(instance_file)
    if not path.exists():
        return None
    try:
        return Golden.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise _input_error(path, f"not a valid golden file: {error}") from None


def compare(outcome: Outcome, golden: Golden | None) -> Comparison:
    """The regressions of an outcome against its golden result."""
    regressions: list[str] = []
    notes: list[str] = []
    if golden is None:
        regressions.append("no golden file: solve, check the plan, then run with --update")
        return Comparison(outcome=outcome, golden=None, regressions=tuple(regressions))
    if outcome.status != golden.status:
        regressions.append(f"status {golden.status} -> {outcome.status}: {outcome.message}")
    if outcome.status == "solved" and not outcome.verified:
        regressions.append(f"plan fails the verifier: {outcome.message}")
    if outcome.cost_per_month is not None and golden.cost_per_month is not None:
        change = outcome.cost_per_month - golden.cost_per_month
        relative = change / golden.cost_per_month if golden.cost_per_month else float(change != 0)
        if abs(relative) > golden.cost_rel_tolerance:
            regressions.append(
                f"cost ${golden.cost_per_month:,.2f} -> ${outcome.cost_per_month:,.2f} per month "
                f"({relative:+.2%}; tolerance {golden.cost_rel_tolerance:.2%})"
            )
    if outcome.status == golden.status == "solved":
        added = sorted(set(outcome.binding_families) - set(golden.binding_families))
        removed = sorted(set(golden.binding_families) - set(outcome.binding_families))
        if added or removed:
            regressions.append(
                "binding families changed:"
                + (f" now binding {', '.join(added)}" if added else "")
                + (f" no longer binding {', '.join(removed)}" if removed else "")
            )
        for gpu, region, before, after in _gpu_changes(golden.gpus, outcome.gpus):
            notes.append(f"{gpu} in {region}: {before} -> {after} GPUs")
    return Comparison(
        outcome=outcome, golden=golden, regressions=tuple(regressions), notes=tuple(notes)
    )


def write_golden(instance_file: Path, outcome: Outcome) -> Path:
    """Freeze an outcome as the golden result (only `--update` calls this)."""
    previous = read_golden(instance_file)
    tolerance = previous.cost_rel_tolerance if previous else DEFAULT_COST_TOLERANCE
    path = golden_path(instance_file)
    text = json.dumps(Golden.of(outcome, tolerance).model_dump(mode="json"), indent=2) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _gpu_changes(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
) -> list[tuple[str, str, int, int]]:
    changes = []
    for gpu in sorted(set(before) | set(after)):
        regions = set(before.get(gpu, {})) | set(after.get(gpu, {}))
        for region in sorted(regions):
            old = before.get(gpu, {}).get(region, 0)
            new = after.get(gpu, {}).get(region, 0)
            if old != new:
                changes.append((gpu, region, old, new))
    return changes
