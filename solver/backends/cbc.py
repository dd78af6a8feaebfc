"""The `cbc` backend: COIN-OR CBC (and CLP for LPs) through PuLP's command-line driver.

PuLP writes the program as MPS with its own row and column names (ours are already
`x<j>` and `c<i>`), runs the `cbc` binary in a subprocess with its output in a log
file, and reads the solution file back. Which binary:

1. the one bundled with PuLP (`PULP_CBC_CMD`): PuLP < 3.3 ships it; 3.3 deprecates
   the class and PuLP 4 drops the binary;
2. else a `cbc` on PATH (`COIN_CMD`), e.g. from apt's `coinor-cbc` or conda-forge's
   `coincbc`;
3. else the backend is unavailable and `unavailable_reason()` says how to get CBC.

- Duals (LPs only, solved by CLP with `-initialSolve`): CLP's row price for a
  minimisation is d(objective)/d(rhs), fleetplan's convention as it stands.
- Time limit: `-sec` with `-timeMode elapsed` (wall clock). CBC checks it between
  nodes, so it can overrun by a node's work. The subprocess start counts against it.
- Gap: `-ratio` prunes the search. When CBC stops on the time limit its log has
  "Objective value" and "Lower bound" and the gap is recomputed from them; when it
  finishes it prints no final bound, so the gap is 0 if none was allowed and unknown
  (None; at most `mip_gap`) otherwise.
- Threads: `-threads`.
"""

import math
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from functools import cache
from importlib import metadata

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
from solver.program.lp import Termination

GET_CBC = (
    "get CBC with one of: pip install 'pulp>=2.8,<3.3' (PuLP bundles CBC up to 3.2); "
    "apt-get install coinor-cbc; brew install cbc; conda install -c conda-forge coincbc "
    "(a `cbc` on PATH is used when PuLP has none)"
)

_LOG_NUMBER = r"\s*([-+0-9.eE]+|inf|-inf)"


def _pulp_version() -> str:
    try:
        return metadata.version("pulp")
    except metadata.PackageNotFoundError:
        import pulp

        return str(getattr(pulp, "__version__", "unknown"))


@cache
def _locate() -> tuple[str, str]:
    """("bundled" | "path", binary) or ("", reason the backend is unavailable)."""
    try:
        import pulp
    except ImportError as exc:
        return "", f"PuLP is not installed ({exc}); {GET_CBC}"
    bundled = getattr(pulp, "PULP_CBC_CMD", None)
    if bundled is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PuLP 3.3 deprecates the class; handled here
            try:
                command = bundled(msg=False)
                if command.available():
                    return "bundled", str(command.path)
            except Exception:
                pass
    on_path = shutil.which("cbc")
    if on_path:
        return "path", on_path
    return "", (
        f"CBC is not available: PuLP {_pulp_version()} has no bundled cbc binary "
        f"(PuLP 3.3 deprecated PULP_CBC_CMD, PuLP 4 removed it) and no `cbc` is on PATH; "
        f"{GET_CBC}"
    )


@cache
def _cbc_version(binary: str) -> str:
    try:
        out = subprocess.run(
            [binary, "-quit"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({type(exc).__name__})"
    found = re.search(r"Version:\s*(\S+)", out)
    return found.group(1) if found else "unknown"


def _log_value(log: str, label: str) -> float | None:
    found = re.findall(rf"^{label}:{_LOG_NUMBER}", log, flags=re.MULTILINE)
    if not found:
        return None
    try:
        return float(found[-1])
    except ValueError:
        return None


class CbcBackend(Backend):
    """CBC (MIP) and CLP (LP) via PuLP's command-line driver."""

    name = "cbc"
    capabilities = Capabilities(
        integer=True, duals=True, time_limit=True, mip_gap=True, threads=True
    )

    def unavailable_reason(self) -> str:
        """Empty when a cbc binary is found; otherwise how to get one."""
        kind, detail = _locate()
        return "" if kind else detail

    def version(self) -> str:
        """CBC's version, e.g. "2.10.3"."""
        kind, binary = _locate()
        return _cbc_version(binary) if kind else "unavailable"

    def _command(self, options: SolveOptions, deadline: Deadline, mip: bool, log_path: str):
        import pulp

        kind, binary = _locate()
        settings = dict(
            mip=mip,
            msg=False,
            timeLimit=deadline.remaining_s(),
            gapRel=options.mip_gap if mip else None,
            threads=options.threads,
            logPath=log_path,
            timeMode="elapsed",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "bundled":
                return pulp.PULP_CBC_CMD(**settings)
            return pulp.COIN_CMD(path=binary, **settings)

    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        import pulp

        program = program.numpy()
        problem = pulp.LpProblem("fleetplan", pulp.LpMinimize)
        columns = [
            pulp.LpVariable(
                f"x{j}",
                lowBound=None if math.isinf(lo) else lo,
                upBound=None if math.isinf(up) else up,
                cat=pulp.LpInteger if integral else pulp.LpContinuous,
            )
            for j, (lo, up, integral) in enumerate(
                zip(
                    program.lower.tolist(),
                    program.upper.tolist(),
                    program.integer.tolist(),
                    strict=True,
                )
            )
        ]
        problem.setObjective(
            pulp.LpAffineExpression(
                [(columns[j], c) for j, c in enumerate(program.cost.tolist()) if c != 0.0]
            )
        )
        rows: dict[int, pulp.LpConstraint] = {}
        for i in range(program.num_rows):
            cols, coefs = program.row(i)
            if cols.size == 0:
                continue  # holds (checked before solving); its dual is 0
            expression = pulp.LpAffineExpression(
                list(zip((columns[j] for j in cols.tolist()), coefs.tolist(), strict=True))
            )
            lo, up = program.row_lower[i], program.row_upper[i]
            if lo == up:
                sense, rhs = pulp.LpConstraintEQ, lo
            elif math.isinf(up):
                sense, rhs = pulp.LpConstraintGE, lo
            elif math.isinf(lo):
                sense, rhs = pulp.LpConstraintLE, up
            else:
                raise ValueError(f"ranged row {program.constraint_names[i]} is not supported")
            rows[i] = pulp.LpConstraint(expression, sense=sense, name=f"c{i}", rhs=rhs)
            problem.addConstraint(rows[i])

        with tempfile.TemporaryDirectory(prefix="fleetplan-cbc-") as folder:
            log_path = os.path.join(folder, "cbc.log")
            command = self._command(options, deadline, program.is_mip, log_path)
            command.tmpDir = folder
            try:
                problem.solve(command)
            except pulp.PulpSolverError as exc:
                return Answer(Termination.ERROR, message=f"CBC failed: {exc}")
            with open(log_path, errors="replace") as handle:
                log = handle.read()

        status, solution_status = problem.status, problem.sol_status
        if status == pulp.LpStatusInfeasible:
            return Answer(Termination.INFEASIBLE)
        if status == pulp.LpStatusUnbounded:
            return Answer(Termination.UNBOUNDED)
        if status == pulp.LpStatusNotSolved:
            if options.time_limit_s is not None:
                return Answer(Termination.TIME_LIMIT, message="CBC: time limit, no solution")
            return Answer(Termination.ERROR, message="CBC stopped without a solution")
        if status != pulp.LpStatusOptimal:
            return Answer(Termination.ERROR, message=f"CBC: {pulp.LpStatus.get(status, status)}")

        stopped = solution_status == pulp.LpSolutionIntegerFeasible
        termination = Termination.FEASIBLE if stopped else Termination.OPTIMAL
        values = np.array([column.varValue or 0.0 for column in columns], dtype=float)
        objective = float(program.cost @ values) + program.objective_constant
        gap = None
        if program.is_mip:
            bound = _log_value(log, "Lower bound")
            if bound is not None:
                gap = relative_gap(objective, bound + program.objective_constant)
            elif not stopped and options.mip_gap == 0.0:
                gap = 0.0  # the tree was searched to the end with no gap allowed
            # else: "Optimal solution found" prints no final bound; the search pruned
            # within `-ratio`, so the gap is <= mip_gap but not known: None
        duals = None
        if options.want_duals and not program.is_mip:
            duals = np.zeros(program.num_rows)
            for i, row in rows.items():
                duals[i] = row.pi or 0.0
        message = "CBC: stopped on the time limit" if stopped else ""
        return Answer(termination, objective, values, duals, gap, message)
