"""The verifier's verdict (part of solver.verify.fleet, held to its rule: from solver/ it reads
the plan schema and the row names only): a violation named after the requirement it
breaks, the demand checked per scenario, and the tolerances the checks allow.
"""

import math
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

DEMAND_TOLERANCE = 1e-6
"""Relative shortfall of served demand tolerated (solver feasibility tolerance)."""
ENGINE_TOLERANCE = 1e-6
"""Relative excess of a shared engine's stated capacity over the recomputed one allowed."""
COST_TOLERANCE = 0.01
"""USD per month by which a stated cost may differ from the recomputed one."""
RELATIVE = 1e-6
"""Relative difference tolerated on a recomputed rate or count of hours (float sums)."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class Finding(NamedTuple):
    """One figure that is wrong: where (a plan field path or a row name) and why."""

    requirement: str
    message: str


class Violation(BaseModel):
    """One requirement the fleet breaks, with the numbers."""

    model_config = _FROZEN

    requirement: str
    message: str

    def __str__(self) -> str:
        return f"{self.requirement}: {self.message}"


class ScenarioCheck(BaseModel):
    """Demand against what the fleet can serve in one scenario, for one workload."""

    model_config = _FROZEN

    scenario: str
    workload: str
    demand_requests_per_s: float
    servable_requests_per_s: float


class Verification(BaseModel):
    """The verifier's verdict and the figures it recomputed."""

    model_config = _FROZEN

    ok: bool
    violations: tuple[Violation, ...]
    cost_per_month: float
    total_gpus: int
    """GPUs the pools use."""
    checks: tuple[ScenarioCheck, ...]
    warnings: tuple[Violation, ...] = ()
    """Stated figures that differ from the recomputed physics without breaking a
    requirement (a per-replica capacity, a limiting factor): the plan still holds."""
    gpus_bought: int | None = None
    """GPUs bought beyond the existing fleet, in whole servers with buy_unit node (None
    where this check does not count them)."""
    stopped: str | None = None
    """Why nothing was recomputed, where the verifier stopped before its arithmetic (a
    number in the plan not finite, an hour beyond the supply): the figures above are then
    not the plan's (0), and say nothing."""

    @classmethod
    def stopped_at(cls, violations: list[Violation], why: str) -> "Verification":
        """The verdict of a verifier stopped before its arithmetic (`stopped`: `why`)."""
        return cls(
            ok=False,
            violations=tuple(violations),
            cost_per_month=0.0,
            total_gpus=0,
            checks=(),
            stopped=why,
        )


def close(stated: float, recomputed: float) -> bool:
    """Whether a stated rate or count of hours agrees with its recomputation."""
    return math.isclose(stated, recomputed, rel_tol=RELATIVE, abs_tol=RELATIVE)


def agrees(stated: float | None, recomputed: float | None) -> bool:
    """Whether an optional figure agrees with its recomputation: both absent, or both
    present and `close`."""
    if stated is None or recomputed is None:
        return stated is None and recomputed is None
    return close(stated, recomputed)


def differs(path: str, stated: object, recomputed: object, what: str) -> Violation:
    return Violation(requirement=path, message=f"states {stated}; {what} {recomputed}")
