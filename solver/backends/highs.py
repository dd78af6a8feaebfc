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
"""

import contextlib
import os
import sys
import threading
from functools import cache

import numpy as np

from solver.backends.base import (
    Answer,
    Backend,
    Capabilities,
    CompiledProgram,
    Deadline,
    SolveOptions,
    relative_gap,
)
from solver.lp import Termination

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


def _new_highs():
    """A silent `highspy.Highs`; the first one of the process swallows the banner."""
    import highspy

    global _banner_done
    if not _banner_done:
        with _banner_lock:
            if not _banner_done:
                with _stdout_to_devnull():
                    highspy.Highs()
                _banner_done = True
    highs = highspy.Highs()
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
    as the model's offset (a solve adds the constant itself)."""
    import highspy

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
    model.a_matrix_.start_ = program.row_start.astype(np.int32)
    model.a_matrix_.index_ = program.col_index.astype(np.int32)
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
        integer=True, duals=True, time_limit=True, mip_gap=True, threads=True, warm_start=True
    )

    def unavailable_reason(self) -> str:
        """Empty when highspy imports."""
        try:
            import highspy  # noqa: F401
        except ImportError as exc:
            return f"highspy is not installed ({exc}): pip install highspy"
        return ""

    def version(self) -> str:
        """HiGHS's version, e.g. "1.16.0"."""
        return _highs_version()

    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        import highspy

        highs = _new_highs()
        _use_threads(highs, options.threads)
        highs.setOptionValue("mip_rel_gap", options.mip_gap)
        # No restarts of the root after presolve: on the 10 x 20 x 6 region-loss bench's
        # workload programs, 5.3-6.0 s of HiGHS CPU against 6.1-6.6 s with them (four
        # seeds); chat-3region 5.4 s against 6.7 s.
        highs.setOptionValue("mip_allow_restart", False)
        remaining = deadline.remaining_s()
        if remaining is not None:
            highs.setOptionValue("time_limit", remaining)

        status = highs.passModel(highs_lp(program))
        if status == highspy.HighsStatus.kError:
            return Answer(Termination.ERROR, message="HiGHS rejected the model")
        if program.start is not None:
            start = highspy.HighsSolution()
            start.col_value = program.start.tolist()
            start.value_valid = True
            highs.setSolution(start)  # an infeasible start is ignored, not an error
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
        else:
            return Answer(Termination.ERROR, message=f"HiGHS: {status_text}")

        solution = highs.getSolution()
        values = np.asarray(solution.col_value, dtype=float)
        objective = float(info.objective_function_value) + program.objective_constant
        gap = None
        if program.is_mip:
            gap = relative_gap(objective, float(info.mip_dual_bound) + program.objective_constant)
        duals = None
        if options.want_duals and not program.is_mip and solution.dual_valid:
            duals = np.asarray(solution.row_dual, dtype=float)
        message = "" if termination is Termination.OPTIMAL else f"HiGHS: {status_text}"
        return Answer(termination, objective, values, duals, gap, message)
