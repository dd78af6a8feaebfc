"""The `highs` backend: HiGHS through highspy, in process, the default.

highspy is called directly rather than through PuLP's `HiGHS` class (which wraps the
same highspy): the program goes in as one row-wise sparse matrix (`passModel`), no
PuLP object is built, and duals, gap and status come straight from HiGHS.

- Duals: HiGHS's `row_dual` for a minimisation is d(objective)/d(row bound), which is
  fleetplan's d(objective)/d(rhs) as it stands: min 3x + 2y, x + y >= 4, x >= 1 gives
  +2 and +1.
- Time limit, MIP gap (`mip_rel_gap`) and threads are HiGHS options. HiGHS keeps a
  task scheduler per thread, sized by the first solve that thread runs; a later solve
  in the same thread asking for another thread count resets it first.
- Warm start: a MIP given a feasible solution (`CompiledProgram.start`) begins its
  search with it as the incumbent (`setSolution`), so nodes above its cost are pruned
  from the start.
- Quiet: HiGHS prints a banner on stdout (C level) when the first `Highs` object of a
  process is built, before any option can be set. That one construction runs with
  file descriptor 1 pointed at /dev/null; every solve sets `output_flag` false.
- Without numpy where it can (issue 19: numpy's import is a fifth of a one-model
  solve's time). highspy's package `__init__` imports its Python layer (highspy/highs.py),
  which imports numpy, and HighsLp's array fields convert through numpy too. So the
  backend loads the compiled module `highspy._core` from its file next to highspy's
  `__init__` (`_core()`), uses its `_Highs` class (the base of `highspy.Highs`, whose
  additions are callbacks and a solve thread this backend does not use), and hands a
  small program (up to `SMALL_PROGRAM_NONZEROS` coefficients) to HiGHS as free-format
  MPS text read from a temporary file (`mps_text`), the same columns, rows, bounds and
  coefficients, to the bit, as the arrays. A larger program goes in as arrays
  (`highs_lp`, numpy imported): writing and parsing text costs about 2 us per
  coefficient, numpy's import 60 ms once.
"""

import contextlib
import importlib.machinery
import importlib.util
import math
import os
import sys
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

from solver import progress
from solver.backends.base import (
    Answer,
    Backend,
    Capabilities,
    CompiledProgram,
    Deadline,
    SolveOptions,
    relative_gap,
)
from solver.program.lp import LinearProgram, Termination

PSCOST_MIN_RELIABLE: int | None = None
"""HiGHS's `mip_pscost_minreliable` where set (None: HiGHS's own, 8): how many
strong-branching probes a column's pseudo-cost needs before branching trusts it. Off:
at 1 the fleet programs' searches are shorter (most of their work is strong branching:
chat-3region's whole program from the solve's start, 19,427 of 33,438 LP iterations),
chat-3region's whole program from the solve's start 3.75 s -> 2.60 s of HiGHS CPU (six
seeds), its `allow gh200` lever's program from the base plan 27.2 s -> 20.5 s (two
seeds; at 2 probes 27.7 s), `batch instances` at the same costs and CPU. But the
generated 10 regions x 5 workloads x 3 GPU types region-loss instance (single GPUs,
tests.synthetic, seed 0) took 9.8-9.9 s of CPU against 8.4-8.9 s, and it breaks
chat-3region's tie differently: the same servers and cost, other pools (idle at peak
40.9% of the GPU-hours paid against 38.9%), so the README's demo, cost split and
replay of the default plan would move with it (tests/bench/test_chat3region_search.py
prints chat-3region's side by side)."""

_banner_lock = threading.Lock()
_banner_done = False
_scheduler = threading.local()


@contextlib.contextmanager
def _stdout_to_devnull():
    """Point file descriptor 1 at /dev/null (C-level output included), then restore.

    Without a file descriptor 1 to save (a daemon), there is nothing to protect.
    """
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


SMALL_PROGRAM_NONZEROS = 2_000
"""Programs with at most this many coefficients go to HiGHS as MPS text, without numpy,
in a process that has not loaded numpy yet (`_numpy_loaded`).

At about 2 us per coefficient (format and parse) against 60 ms for numpy's import, text
is cheaper up to some 30,000 coefficients in a process; 2,000 keeps every program of a
one- or few-model question on text (a one-model, one-region solve has under 20) and
every large one, and each program of a decomposed solve, on arrays."""


@cache
def _core() -> ModuleType:
    """highspy's compiled module, `highspy._core`, loaded without highspy's `__init__`
    (which imports numpy through highspy/highs.py); the module holds `_Highs`, `HighsLp`,
    `HighsSolution` and the status enums.

    highspy's wheels put the extension next to the package's `__init__`. Where it is not
    found there (another layout, or highspy already imported) the whole package is
    imported, which re-exports the same names.

    Raises:
        ImportError: highspy is not installed.
    """
    loaded = sys.modules.get("highspy._core")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("highspy")  # locates the package, runs nothing
    if spec is None:
        raise ImportError("No module named 'highspy'")
    for folder in spec.submodule_search_locations or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, f"_core{suffix}")
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("highspy._core", path)
                core_spec = importlib.util.spec_from_file_location(
                    "highspy._core", path, loader=loader
                )
                if core_spec is None:
                    continue
                module = importlib.util.module_from_spec(core_spec)
                sys.modules["highspy._core"] = module
                try:
                    loader.exec_module(module)
                except BaseException:
                    del sys.modules["highspy._core"]
                    raise
                return module
    import highspy

    return highspy


def _new_highs():
    """A silent HiGHS instance (`_Highs`); the first one of the process swallows the
    banner."""
    core = _core()

    global _banner_done
    if not _banner_done:
        with _banner_lock:
            if not _banner_done:
                with _stdout_to_devnull():
                    core._Highs()
                _banner_done = True
    highs = core._Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("log_to_console", False)
    return highs


def _use_threads(highs, threads: int) -> None:
    """Set the thread count, resetting this thread's HiGHS scheduler if it differs."""
    current = getattr(_scheduler, "threads", None)
    if current is not None and current != threads:
        highs.resetGlobalScheduler(True)
    highs.setOptionValue("threads", threads)
    _scheduler.threads = threads


@cache
def _highs_version() -> str:
    return _new_highs().version()


def highs_lp(program: CompiledProgram, names: bool = False):
    """The compiled program as a `highspy.HighsLp` (rows in CSR form). `names`: a whole
    model for a file (MPS or LP): the column and row names, and the objective constant
    as the model's offset (a solve adds the constant itself). Its array fields import
    numpy (highspy converts them through it)."""
    import numpy as np

    highspy = _core()
    model = highspy.HighsLp()
    model.num_col_ = program.num_variables
    model.num_row_ = program.num_rows
    model.col_cost_ = program.cost
    model.col_lower_ = program.lower
    model.col_upper_ = program.upper
    model.row_lower_ = program.row_lower
    model.row_upper_ = program.row_upper
    model.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    model.a_matrix_.num_col_ = program.num_variables
    model.a_matrix_.num_row_ = program.num_rows
    model.a_matrix_.start_ = np.asarray(program.row_start, dtype=np.int32)
    model.a_matrix_.index_ = np.asarray(program.col_index, dtype=np.int32)
    model.a_matrix_.value_ = program.coef
    if program.is_mip:
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        model.integrality_ = [kinds[flag] for flag in program.integer.tolist()]
    if names:
        model.offset_ = program.objective_constant
        model.col_names_ = list(program.variable_names)
        model.row_names_ = list(program.constraint_names)
    return model


class HighsBackend(Backend):
    """HiGHS (LP: dual simplex; MIP: branch and cut) via highspy."""

    name = "highs"
    capabilities = Capabilities(
        integer=True,
        duals=True,
        time_limit=True,
        mip_gap=True,
        threads=True,
        warm_start=True,
        node_limit=True,
    )

    def unavailable_reason(self) -> str:
        """Empty when highspy's compiled module loads."""
        try:
            _core()
        except ImportError as exc:
            return f"highspy is not installed ({exc}): pip install highspy"
        return ""

    def version(self) -> str:
        """HiGHS's version, e.g. "1.16.0"."""
        return _highs_version()

    def prepare(self, lp: LinearProgram) -> None:
        """numpy, when `lp` is too large for MPS text (`SMALL_PROGRAM_NONZEROS`): its
        import (about 60 ms) is then off the path from the solve to the plan."""
        if lp.size()["nonzeros"] > SMALL_PROGRAM_NONZEROS:
            import numpy  # noqa: F401

    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        highspy = _core()
        highs = _new_highs()
        _use_threads(highs, options.threads)
        highs.setOptionValue("mip_rel_gap", options.mip_gap)
        # No restarts of the root after presolve: faster on the bench's workload programs
        # and on chat-3region (the README's speed notes).
        highs.setOptionValue("mip_allow_restart", False)
        if PSCOST_MIN_RELIABLE is not None:
            highs.setOptionValue("mip_pscost_minreliable", PSCOST_MIN_RELIABLE)
        remaining = deadline.remaining_s()
        if remaining is not None:
            highs.setOptionValue("time_limit", remaining)
        if options.node_limit is not None:
            highs.setOptionValue("mip_max_nodes", options.node_limit)

        status = _pass_program(highs, program)
        if status == highspy.HighsStatus.kError:
            return Answer(Termination.ERROR, message="HiGHS rejected the model")
        if program.start is not None:
            start = highspy.HighsSolution()
            start.col_value = program.start.tolist()
            start.value_valid = True
            highs.setSolution(start)  # an infeasible start is ignored, not an error
        if program.is_mip and progress.listening():
            _report_progress(highs, highspy, deadline, program.objective_constant)
        highs.run()

        model_status = highs.getModelStatus()
        info = highs.getInfo()
        has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
        status_text = highs.modelStatusToString(model_status)
        statuses = highspy.HighsModelStatus
        if model_status == statuses.kInfeasible:
            return Answer(Termination.INFEASIBLE)
        if model_status == statuses.kUnbounded:
            return Answer(Termination.UNBOUNDED)
        if model_status == statuses.kUnboundedOrInfeasible:
            return Answer(None, message="HiGHS: infeasible or unbounded")
        if model_status == statuses.kOptimal:
            termination = Termination.OPTIMAL
        elif has_solution and model_status in (
            statuses.kTimeLimit,
            statuses.kIterationLimit,
            statuses.kSolutionLimit,
            statuses.kInterrupt,
        ):
            termination = Termination.FEASIBLE
        elif model_status == statuses.kTimeLimit:
            return Answer(Termination.TIME_LIMIT, message="HiGHS: time limit, no solution")
        elif model_status == statuses.kSolutionLimit and options.node_limit is not None:
            # mip_max_nodes reached before any solution: no plan within the limits
            return Answer(Termination.TIME_LIMIT, message="HiGHS: node limit, no solution")
        else:
            return Answer(Termination.ERROR, message=f"HiGHS: {status_text}")

        solution = highs.getSolution()
        values = list(solution.col_value)
        objective = float(info.objective_function_value) + program.objective_constant
        gap = None
        if program.is_mip:
            gap = relative_gap(objective, float(info.mip_dual_bound) + program.objective_constant)
        duals = None
        if options.want_duals and not program.is_mip and solution.dual_valid:
            duals = list(solution.row_dual)
        message = "" if termination is Termination.OPTIMAL else f"HiGHS: {status_text}"
        return Answer(termination, objective, values, duals, gap, message)


def _pass_program(highs, program: CompiledProgram):
    """Hand `program` to `highs`: as MPS text when it is small and representable and
    numpy is not loaded yet (`_numpy_loaded`), else (or where the text cannot be written
    or read) as arrays. Returns HiGHS's status."""
    small = program.num_nonzeros <= SMALL_PROGRAM_NONZEROS and not _numpy_loaded()
    text = mps_text(program) if small else None
    if text is not None:
        try:
            status = _read_mps(highs, text)
        except OSError:  # no writable temporary folder: the arrays need none
            status = None
        if status is not None and status != _core().HighsStatus.kError:
            return status
    return highs.passModel(highs_lp(program))


def _numpy_loaded() -> bool:
    """Whether this process has imported numpy: the text then only costs (about 2 us a
    coefficient to write and parse): procurement-3region's months pass 2,075 period
    programs of a few hundred coefficients each, 1.9 s of CPU as text, 0.5 s as arrays."""
    return "numpy" in sys.modules


def _read_mps(highs, text: str):
    """`highs.readModel` of `text` written to a temporary `.mps` file (HiGHS reads a
    model from a path only, and tells the format by its suffix)."""
    import tempfile

    descriptor, path = tempfile.mkstemp(prefix="fleetplan-", suffix=".mps")
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(text)
        return highs.readModel(path)
    finally:
        Path(path).unlink(missing_ok=True)


def mps_text(program: CompiledProgram) -> str | None:
    """The program in free-format MPS, as HiGHS reads it into the model `highs_lp` builds:
    columns `c0..` and rows `r0..` in the program's order, each column's coefficients in
    row order, every bound written out (so no reader default applies: an integer column
    is not taken as binary), floats in `repr` (shortest text that parses back to the
    same double). No objective constant (the solve adds it, as with the arrays).

    Returns:
        The text; None for a program MPS cannot say without ranges: a row with two
        finite bounds that differ, or none (`compile_program` makes neither).
    """
    lines = ["NAME fleetplan", "ROWS", " N obj"]
    for i, (lo, up) in enumerate(zip(program.row_lower, program.row_upper, strict=True)):
        if lo == up:
            kind = "E"
        elif up == math.inf and lo != -math.inf:
            kind = "G"
        elif lo == -math.inf and up != math.inf:
            kind = "L"
        else:
            return None
        lines.append(f" {kind} r{i}")
    entries: list[list[str]] = [[] for _ in range(program.num_variables)]
    starts, columns, coefs = program.row_start, program.col_index, program.coef
    for i in range(program.num_rows):
        for k in range(starts[i], starts[i + 1]):
            entries[columns[k]].append(f" c{columns[k]} r{i} {coefs[k]!r}")
    lines.append("COLUMNS")
    integer_block = False
    for j, (cost, integer) in enumerate(zip(program.cost, program.integer, strict=True)):
        if bool(integer) != integer_block:
            integer_block = bool(integer)
            marker = "INTORG" if integer_block else "INTEND"
            lines.append(f" MARKER 'MARKER' '{marker}'")
        lines.append(f" c{j} obj {cost!r}")  # a zero cost too: it declares the column
        lines.extend(entries[j])
    if integer_block:
        lines.append(" MARKER 'MARKER' 'INTEND'")
    lines.append("RHS")
    for i, (lo, up) in enumerate(zip(program.row_lower, program.row_upper, strict=True)):
        lines.append(f" rhs r{i} {(up if lo == -math.inf else lo)!r}")
    lines.append("BOUNDS")
    for j, (lo, up) in enumerate(zip(program.lower, program.upper, strict=True)):
        if lo == up:
            lines.append(f" FX bnd c{j} {lo!r}")
            continue
        lines.append(f" MI bnd c{j}" if lo == -math.inf else f" LO bnd c{j} {lo!r}")
        lines.append(f" PL bnd c{j}" if up == math.inf else f" UP bnd c{j} {up!r}")
    lines.append("ENDATA")
    return "\n".join(lines) + "\n"


def _report_progress(highs, highspy: ModuleType, deadline: Deadline, offset: float) -> None:
    """Report the MIP's incumbent, bound and gap while it runs (solver.progress), from
    HiGHS's interrupt and improving-solution callbacks."""
    highs.setCallback(progress.IncumbentReporter(deadline.start, offset), None)
    highs.startCallback(highspy.cb.kCallbackMipInterrupt)
    highs.startCallback(highspy.cb.kCallbackMipImprovingSolution)
