"""A folder of instances solved side by side and compared with their golden results.

Each `NAME.yaml` (or `.yml`, `.json`) in the folder may have a golden file
`NAME.expected.json` beside it. A check compares, for every instance:

- status (optimal/feasible count as `solved`; infeasible; no_solution; bad_input),
- cost per month, within the golden file's relative tolerance,
- the set of binding constraint families (where both plans state shadow prices),

and requires the independent verifier to accept every plan. GPUs by type and region are
recorded in the golden file and reported when they change, but alternative optima with
the same cost may legitimately move GPUs between equal-priced options, so they are not a
regression on their own; so are the GPUs bought and the idle share at peak over the GPUs
paid, which a golden records beside the GPUs used.

Each comparison ends in one verdict word (`Verdict`) that names what broke: an instance
that does not validate is `bad input` with its parse error, whether or not it has a golden
file yet; one with no plan is `infeasible`, `no solution` or `rejected`; a plan that
moved is a `regression` or an `improvement`. A golden file records the fingerprint of
what it was solved from (solver.studies.fingerprint); when the instance, the catalog or
the version changed since, the comparison says `input changed` (a failure only under
`--strict`). A golden without a fingerprint (frozen before they were recorded) is of
unknown input and never reads as changed.

Workers get the validated instance (never a built solver model, which does not pickle)
and solve with one solver thread each, in a spawn-context process pool. One bad instance
never sinks the batch: whatever ends an instance (a file that does not validate, an
unknown backend, the time limit, a crash in the pipeline or in a worker) is its
`Outcome`; a golden file that does not validate is a regression of that instance
(`check_golden`), named field by field. Golden files are written (`write_golden`) under a
lock on their folder, each through its own temporary file: no partial or mixed golden.
"""

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.io.documents import read_document
from models.io.loading import load_instance, schema_issues
from models.io.output_files import folder_lock, write_text
from models.schema.errors import InputError, Issue
from models.schema.instance import Instance
from solver.backends import UnknownBackendError
from solver.errors import BackendUnavailable, Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan, Real, Whole
from solver.settings import SolveSettings
from solver.solve import solve
from solver.studies.changes import binding_change, count_changes, gpu_changes, input_changed
from solver.studies.fingerprint import Fingerprint, fingerprint
from solver.verify.hours import verify_any as verify
from solver.workers import process_pool

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
    """solved | infeasible | no_solution (time limit or solver failure) | bad_input |
    rejected (the verifier refused the plan) | error (a crash: a bug to report)"""
    plan_status: str = ""
    """For a solved instance: "optimal" or "feasible (gap X%)" (solver.plan.schema.plan_status)."""
    mip_gap: float | None = None
    """The plan's relative gap to its bound as a number (Plan.solver.mip_gap, 0.0123 for the
    "gap 1.23%" of plan_status); None without a plan or where the backend gives no bound."""
    cost_per_month: float | None = None
    total_gpus: int | None = None
    """GPUs the pools use."""
    gpus_bought: int | None = None
    """GPUs bought beyond the existing fleet (whole servers with buy_unit node)."""
    idle_fraction: float | None = None
    """Idle at peak over the GPUs paid (Plan.idle_fraction; None for hourly plans)."""
    gpus: dict[str, dict[str, int]] = Field(default_factory=dict)
    """{gpu: {region: GPUs used}}"""
    binding_families: tuple[str, ...] | None = ()
    """None where the plan states no shadow prices (`Plan.priced`): which families bind is
    then not known, and a check does not compare them."""
    verified: bool = False
    runtime_s: float = 0.0
    """Wall time of the whole instance (loading, candidates, solve, pricing, verifier)."""
    message: str = ""
    fingerprint: Fingerprint | None = None
    """What the instance was solved from; None when it never validated."""


FAILED_STATUSES = frozenset({"bad_input", "error"})
"""Outcomes that say nothing about the instance's plan; never frozen as golden."""


Count = Annotated[Whole, Field(ge=0)]
"""GPUs a golden records: a plan's integer (which may be a negative month) that is >= 0."""


class Golden(BaseModel):
    """The frozen expected result of one instance (`NAME.expected.json`); numbers must be
    finite (a NaN cost is a bad golden, not a cost no change can exceed), costs and
    counts >= 0 and the idle share within 0..1: a golden edited to $-5 read a plan at
    $14,016 as -280,420% cheaper, an `improvement` (exit 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    status: str
    cost_per_month: Annotated[Real, Field(ge=0)] | None = None
    cost_rel_tolerance: Real = Field(default=DEFAULT_COST_TOLERANCE, ge=0)
    total_gpus: Count | None = None
    """GPUs used."""
    gpus_bought: Count | None = None
    """GPUs bought (None in goldens frozen before it was recorded)."""
    idle_fraction: Annotated[Real, Field(ge=0, le=1)] | None = None
    """Idle at peak over the GPUs paid, to 0.1% (None: not recorded, or an hourly plan)."""
    gpus: dict[str, dict[str, Count]] = Field(default_factory=dict)
    binding_families: tuple[str, ...] | None = ()
    """None where frozen from a plan without shadow prices (not known, never compared)."""
    fingerprint: Fingerprint | None = None
    """What the golden was solved from; None in goldens frozen before it was recorded
    (unknown: never reported as changed)."""

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
            gpus_bought=outcome.gpus_bought,
            idle_fraction=None
            if outcome.idle_fraction is None
            else round(outcome.idle_fraction, 3),
            gpus=outcome.gpus,
            binding_families=outcome.binding_families,
            fingerprint=outcome.fingerprint,
        )


class Verdict(StrEnum):
    """One word for what a check found, the most telling first when several apply."""

    ERROR = "error"
    """A crash in the pipeline or a worker: a bug to report."""
    BAD_INPUT = "bad input"
    """The instance file (or the solver settings) does not validate."""
    INFEASIBLE = "infeasible"
    """No plan meets the instance, and the golden file does not say so."""
    NO_SOLUTION = "no solution"
    """The time limit or the solver ended without a plan."""
    REJECTED = "rejected"
    """The independent verifier refuses the plan."""
    NO_GOLDEN = "no golden"
    """A plan with nothing to compare it to: check it, then freeze it with --update."""
    REGRESSION = "regression"
    """The plan is costlier, binds other families or changed status."""
    INPUT_CHANGED = "input changed"
    """The instance, catalog or version differs from the golden's; fails under --strict."""
    IMPROVEMENT = "improvement"
    """A verified plan cheaper than the golden beyond its tolerance."""
    OK = "ok"


_ENDINGS = {
    "error": Verdict.ERROR,
    "bad_input": Verdict.BAD_INPUT,
    "infeasible": Verdict.INFEASIBLE,
    "no_solution": Verdict.NO_SOLUTION,
    "rejected": Verdict.REJECTED,
}
"""The verdict of an outcome that ended without a plan."""


def led_by(word: str, message: str) -> str:
    """`word: message`, unless the message already starts with the word."""
    if message.lower().startswith(f"{word}:"):
        return message
    return f"{word}: {message}".rstrip(": ")


def outcome_verdict(outcome: Outcome) -> Verdict:
    """The verdict of an outcome on its own (no golden file): how it ended, `rejected`
    for a plan the verifier refuses, else ok."""
    if outcome.status in _ENDINGS:
        return _ENDINGS[outcome.status]
    return Verdict.OK if outcome.verified else Verdict.REJECTED


class Comparison(BaseModel):
    """One instance checked against its golden file."""

    model_config = _FROZEN

    outcome: Outcome
    golden: Golden | None
    regressions: tuple[str, ...] = ()
    """What changed in a way that fails the check."""
    notes: tuple[str, ...] = ()
    """What changed without failing it (GPU moves at equal cost)."""
    improvements: tuple[str, ...] = ()
    """A verified plan cheaper than the golden beyond its tolerance: better, not a
    regression (the check passes; `--update` freezes the new cost)."""
    input_changed: str = ""
    """Which of instance, catalog and version differ from the golden's fingerprint
    ("" when none does, or the golden has no fingerprint)."""
    verdict: Verdict = Verdict.OK

    @property
    def ok(self) -> bool:
        """No regression."""
        return not self.regressions

    def passes(self, strict: bool = False) -> bool:
        """No regression, and under `strict` no input change either."""
        return self.ok and not (strict and self.input_changed)


def instance_files(folder: Path) -> list[Path]:
    """The instance files of a folder, sorted by name (golden files excluded): every entry
    but a sub-folder with an instance suffix, so that a FIFO, a dangling or looping link
    is reported as bad input, not silently left out of the run."""
    if not folder.exists():
        raise _input_error(folder, "no such folder")  # as a missing file reads
    if not folder.is_dir():
        raise _input_error(folder, "is not a folder of instance files")
    return sorted(
        path
        for path in folder.iterdir()
        if not path.is_dir()
        and path.suffix.lower() in INSTANCE_SUFFIXES
        and not path.name.endswith(GOLDEN_SUFFIX)
    )


def _input_error(path: Path, message: str) -> InputError:
    """An InputError about one path."""
    return InputError([Issue(str(path), None, "", message)])


def golden_path(instance_file: Path) -> Path:
    """`NAME.expected.json` beside `NAME.yaml`."""
    return instance_file.with_name(instance_file.stem + GOLDEN_SUFFIX)


def check_one_golden_each(files: list[Path]) -> None:
    """Raise InputError naming instance files that share a golden (`a.yaml` and `a.json`
    both have `a.expected.json`): `--update` wrote it once per file, the last silently
    winning, and `--check` held each of them to it."""
    shared: dict[Path, list[Path]] = defaultdict(list)
    for path in files:
        shared[golden_path(path)].append(path)
    issues = [
        Issue(str(golden), None, "", f"is the golden of {', '.join(p.name for p in paths)}: "
              "rename all but one, so that each instance has its own")
        for golden, paths in shared.items()
        if len(paths) > 1
    ]  # fmt: skip
    if issues:
        raise InputError(issues)


def solve_or_ending(
    instance: Instance, backend: str | None, started: float
) -> tuple[Plan | None, str, str]:
    """Solve with one solver thread within the instance's time limit, counted from
    `started`: (plan, "solved", "") or (None, status, message) for each way a solve ends
    without a plan (bad_input, infeasible, no_solution, rejected)."""
    try:
        settings = SolveSettings.of(instance, backend=backend, threads=1).started(at=started)
        return solve(instance, settings), "solved", ""
    except (UnknownBackendError, BackendUnavailable, ValueError) as error:
        return None, "bad_input", f"--backend/solver settings: {error}"
    except Infeasible as error:
        return None, "infeasible", str(error)
    except NoSolution as error:
        return None, "no_solution", str(error)
    except PlanRejected as error:
        return None, "rejected", str(error)


def solve_one(file: str, instance: Instance | None, backend: str | None) -> Outcome:
    """Solve and verify one instance within its own time limit; every way it can end,
    a crash included, becomes an Outcome."""
    started = time.monotonic()
    try:
        return _solve_one(file, instance, backend, started)
    except Exception as error:  # one instance's crash is its outcome, never the batch's
        return Outcome(
            file=file,
            instance=instance.name if instance is not None else "",
            status="error",
            runtime_s=time.monotonic() - started,
            message=f"internal error ({type(error).__name__}: {error}); please report it",
        )


def _solve_one(file: str, instance: Instance | None, backend: str | None, started: float):
    def ended(status: str, message: str) -> Outcome:
        name, solved_from = (
            ("", None) if instance is None else (instance.name, fingerprint(instance))
        )
        wall_s = time.monotonic() - started
        return Outcome(
            file=file,
            instance=name,
            status=status,
            runtime_s=wall_s,
            message=message,
            fingerprint=solved_from,
        )

    if instance is None:
        try:
            instance = load_instance(file)
        except InputError as error:
            return ended("bad_input", str(error))
    plan, status, message = solve_or_ending(instance, backend, started)
    if plan is None:
        return ended(status, message)
    # A horizon's plan takes the solve's verdict: verified whole as returned, bands in
    # (solver.solve._solve_months; else PlanRejected: `rejected`), its summary recomputed
    # from it; a static or day plan is verified again (the solve verifies it before its
    # bands and summary, a warm/cold split against the split instance).
    check = None if plan.months else verify(instance, plan)
    ok = check is None or check.ok
    return Outcome(
        file=file,
        instance=instance.name,
        status="solved",
        plan_status=plan.status,
        mip_gap=plan.solver.mip_gap,
        cost_per_month=plan.cost_per_month,
        total_gpus=plan.total_gpus,
        gpus_bought=sum(use.purchased for use in plan.gpus),
        idle_fraction=plan.idle_fraction,
        gpus=plan.gpus_by_type_and_region(),
        binding_families=tuple(sorted({b.family for b in plan.binding})) if plan.priced else None,
        verified=ok,
        runtime_s=time.monotonic() - started,
        message="" if ok else "; ".join(str(v) for v in check.violations),
        fingerprint=fingerprint(instance),
    )


def _load(path: Path) -> tuple[Instance | None, Outcome | None]:
    """The validated instance of a file, or the outcome that ends it (bad input, crash)."""
    started = time.monotonic()
    try:
        return load_instance(path), None
    except InputError as error:
        status, message = "bad_input", str(error)
    except Exception as error:  # a loader crash is this file's outcome
        status, message = "error", f"internal error ({type(error).__name__}: {error})"
    wall_s = time.monotonic() - started
    return None, Outcome(file=str(path), status=status, runtime_s=wall_s, message=message)


def run_batch(
    files: Iterable[Path],
    jobs: int = 1,
    backend: str | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Solve every file, `jobs` at a time, in input order; one Outcome per file.

    Files are loaded and validated here; a file that fails validation becomes a
    `bad_input` outcome without reaching a worker, and a worker that dies becomes an
    `error` outcome of its instance.
    """
    files = list(files)
    work: list[tuple[str, Instance]] = []
    outcomes: dict[str, Outcome] = {}

    def record(file: str, outcome: Outcome) -> None:
        outcomes[file] = outcome
        if on_done:
            on_done(outcome)

    for path in files:
        instance, failed = _load(path)
        if failed is not None:
            record(str(path), failed)
        else:
            work.append((str(path), instance))
    if jobs <= 1 or len(work) <= 1:
        for file, instance in work:
            record(file, solve_one(file, instance, backend))
    else:
        with process_pool(jobs) as pool:
            futures = {
                pool.submit(solve_one, file, instance, backend): file for file, instance in work
            }
            for future in as_completed(futures):
                file = futures[future]
                try:
                    outcome = future.result()
                except Exception as error:  # the worker process died
                    outcome = Outcome(
                        file=file,
                        status="error",
                        message=f"worker failed ({type(error).__name__}: {error})",
                    )
                record(file, outcome)
    return [outcomes[str(path)] for path in files]


def orphan_goldens(folder: Path) -> list[Path]:
    """Golden files in `folder` with no instance file beside them."""
    instances = {path.stem for path in instance_files(folder)}
    return sorted(
        path
        for path in folder.glob(f"*{GOLDEN_SUFFIX}")
        if path.name[: -len(GOLDEN_SUFFIX)] not in instances
    )


def read_golden(instance_file: Path) -> Golden | None:
    """The golden result beside an instance file, or None when there is none.

    Read as every input is (models.io.documents.read_document): a FIFO, a device or a
    file over the size limit is refused, never waited on or read to its end.

    Raises:
        InputError: the golden file cannot be read or does not validate.
    """
    path = golden_path(instance_file)
    if not path.exists() and not path.is_symlink():  # a looping or dangling link is read
        return None  # (and refused, named), not taken for no golden
    data, lines = read_document(path, "golden")  # bounded: regular files only, size and depth
    try:
        return Golden.model_validate(data)
    except ValidationError as error:  # field by field, as an instance's and a plan's are
        raise InputError(schema_issues(error, Golden, str(path), lines, data)) from None


def check_golden(outcome: Outcome) -> Comparison:
    """An outcome against its golden file; a golden that does not validate is a
    regression of this instance (fix it, or regenerate it with `--update`)."""
    try:
        golden = read_golden(Path(outcome.file))
    except InputError as error:
        return Comparison(
            outcome=outcome,
            golden=None,
            regressions=(f"bad golden file: {error}",),
            verdict=Verdict.REGRESSION,
        )
    return compare(outcome, golden)


def compare(outcome: Outcome, golden: Golden | None) -> Comparison:
    """The regressions of an outcome against its golden result, and its verdict.

    An outcome that failed (bad input, a crash), or ended without a plan where there is no
    golden to expect it, is reported as itself, with its message (the parse error), never
    as a missing golden file.
    """
    ending = _ENDINGS.get(outcome.status)
    expected = golden is not None and golden.status == outcome.status
    if outcome.status in FAILED_STATUSES or (ending is not None and golden is None):
        reason = led_by(ending, outcome.message)
        return Comparison(outcome=outcome, golden=golden, regressions=(reason,), verdict=ending)
    if golden is None and not outcome.verified:
        reason = f"plan fails the verifier: {outcome.message}"
        return Comparison(
            outcome=outcome, golden=None, regressions=(reason,), verdict=Verdict.REJECTED
        )
    if golden is None:
        reason = "no golden file: solve, check the plan, then run with --update"
        return Comparison(
            outcome=outcome, golden=None, regressions=(reason,), verdict=Verdict.NO_GOLDEN
        )
    regressions: list[str] = []
    notes: list[str] = []
    improvements: list[str] = []
    if outcome.status != golden.status:
        regressions.append(f"status {golden.status} -> {outcome.status}: {outcome.message}")
    if outcome.status == "solved" and not outcome.verified:
        regressions.append(f"plan fails the verifier: {outcome.message}")
    if outcome.cost_per_month is not None and golden.cost_per_month is not None:
        change = outcome.cost_per_month - golden.cost_per_month
        relative = change / golden.cost_per_month if golden.cost_per_month else float(change != 0)
        if abs(relative) > golden.cost_rel_tolerance:
            line = (
                f"cost ${golden.cost_per_month:,.2f} -> ${outcome.cost_per_month:,.2f} per month "
                f"({relative:+.2%}; tolerance {golden.cost_rel_tolerance:.2%})"
            )
            cheaper = relative < 0 and outcome.status == golden.status and outcome.verified
            (improvements if cheaper else regressions).append(line)
    if outcome.status == golden.status == "solved":
        if moved := binding_change(outcome, golden):
            regressions.append(moved)
        for gpu, region, before, after in gpu_changes(golden.gpus, outcome.gpus):
            notes.append(f"{gpu} in {region}: {before} -> {after} GPUs")
        notes += count_changes(outcome, golden)
    changed = input_changed(outcome, golden)
    if ending is not None and not expected:
        verdict = ending
    elif outcome.status == "solved" and not outcome.verified:
        verdict = Verdict.REJECTED
    elif regressions:
        verdict = Verdict.REGRESSION
    elif changed:
        verdict = Verdict.INPUT_CHANGED
    else:
        verdict = Verdict.IMPROVEMENT if improvements else Verdict.OK
    return Comparison(
        outcome=outcome,
        golden=golden,
        regressions=tuple(regressions),
        notes=tuple(notes),
        improvements=tuple(improvements),
        input_changed=changed,
        verdict=verdict,
    )


def write_golden(instance_file: Path, outcome: Outcome) -> Path:
    """Freeze an outcome as the golden result (only `--update` calls this).

    The previous golden's cost tolerance is kept when it is readable; a corrupt golden is
    simply replaced. The write holds the folder's lock and goes through a temporary file
    of its own (models.io.output_files), so concurrent writers never mix or truncate.

    Raises:
        InputError: the golden file cannot be written (naming it).
    """
    path = golden_path(instance_file)
    with folder_lock(path.parent):
        try:
            previous = read_golden(instance_file)
        except InputError:
            previous = None
        tolerance = previous.cost_rel_tolerance if previous else DEFAULT_COST_TOLERANCE
        golden = Golden.of(outcome, tolerance)
        text = json.dumps(golden.model_dump(mode="json"), indent=2) + "\n"
        write_text(path, text, (instance_file,))
    return path
