"""Answers that are not a plan: infeasibility with its diagnosis, and no solution in time.

Both are exceptions carrying frozen records, so a caller that wants a plan gets one or
a reason, never None.
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One requirement that cannot hold, with the numbers and what would fix it."""

    requirement: str
    """The requirement in the program's vocabulary, e.g. `gpu_supply[us-east,b200]`."""
    message: str
    """What is needed against what is available."""
    remedy: str = ""
    """What to change."""

    def __str__(self) -> str:
        text = f"{self.requirement}: {self.message}"
        return f"{text} (remedy: {self.remedy})" if self.remedy else text


@dataclass(frozen=True)
class Diagnosis:
    """Why an instance has no plan: the requirements in conflict."""

    summary: str
    problems: tuple[Problem, ...]
    method: str
    """How the conflict was found: pre-solve check, or elastic re-solve."""

    def __str__(self) -> str:
        lines = [self.summary, *(f"  - {problem}" for problem in self.problems)]
        return "\n".join(lines)


class SolveError(Exception):
    """A solve that produced no plan."""


class Infeasible(SolveError):
    """No plan meets every requirement; `diagnosis` names the ones in conflict."""

    def __init__(self, diagnosis: Diagnosis):
        self.diagnosis = diagnosis
        super().__init__(str(diagnosis))

    @classmethod
    def from_problems(cls, problems: list[Problem], method: str = "pre-solve check"):
        """An infeasibility found before any program was built."""
        count = len(problems)
        summary = f"infeasible: {count} requirement{'s' if count != 1 else ''} cannot be met"
        return cls(Diagnosis(summary, tuple(problems), method))


class NoSolution(SolveError):
    """The backend stopped (time limit, error) without any plan."""

    def __init__(self, message: str, termination: str):
        self.termination = termination
        super().__init__(message)


class BackendUnavailable(SolveError):
    """The chosen backend cannot run in this environment; the message says how to fix it."""


class PlanRejected(SolveError):
    """The solver returned a plan the independent verifier rejects (a bug, not an answer).

    `violations` holds the verifier's findings, each naming the requirement it breaks;
    `headline` says it in one line (the first finding and how many more)."""

    def __init__(self, what: str, violations: Sequence[object]):
        self.violations = tuple(str(violation) for violation in violations)
        super().__init__(
            f"{what} fails the independent verifier:\n"
            + "\n".join(f"  - {violation}" for violation in self.violations)
        )
        self.what = what

    @property
    def headline(self) -> str:
        """`WHAT fails the independent verifier: FIRST (and N more)`, on one line."""
        first = " ".join(self.violations[0].split()) if self.violations else "no reason given"
        more = len(self.violations) - 1
        tail = f" (and {more} more)" if more > 0 else ""
        return f"{self.what} fails the independent verifier: {first}{tail}"
