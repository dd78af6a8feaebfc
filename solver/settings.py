"""The one runtime settings object of a solve: which backend, and its limits.

The instance file's `solver` section (`models.instance.SolverSettings`) is the schema a
user writes; `SolveSettings` is what the pipeline, the decomposition, the diagnosis and
every backend call read. `SolveSettings.of` applies command-line overrides to the
instance's section; `Backend.solve` builds one from its keyword arguments, so a backend
sees the same object (`solver.backends.base.SolveOptions` is this class).
"""

import math
from dataclasses import dataclass, replace

from models.backend_names import DEFAULT_BACKEND
from models.instance import Instance


@dataclass(frozen=True)
class SolveSettings:
    """Backend, limits and whether duals are wanted, validated once."""

    backend: str = DEFAULT_BACKEND
    time_limit_s: float | None = 60.0
    """Wall-clock budget; None for no limit."""
    mip_gap: float = 1e-3
    threads: int = 1
    want_duals: bool = False
    """Return row duals (an LP only, and a backend that can)."""

    def __post_init__(self) -> None:
        if self.time_limit_s is not None and not (
            math.isfinite(self.time_limit_s) and self.time_limit_s > 0
        ):
            raise ValueError(f"time_limit_s must be a positive number, got {self.time_limit_s}")
        if not (math.isfinite(self.mip_gap) and self.mip_gap >= 0):
            raise ValueError(f"mip_gap must be a number >= 0, got {self.mip_gap}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {self.threads!r}")

    @classmethod
    def of(
        cls,
        instance: Instance,
        backend: str | None = None,
        time_limit_s: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
    ) -> "SolveSettings":
        """The instance's `solver` section with any given override applied."""
        base = instance.solver
        return cls(
            backend=backend or base.backend,
            time_limit_s=base.time_limit_s if time_limit_s is None else time_limit_s,
            mip_gap=base.mip_gap if mip_gap is None else mip_gap,
            threads=base.threads if threads is None else threads,
        )

    def limited(self, time_limit_s: float | None) -> "SolveSettings":
        """The same settings with another time limit."""
        return replace(self, time_limit_s=time_limit_s)

    def with_duals(self, want_duals: bool = True) -> "SolveSettings":
        """The same settings asking (or not) for duals."""
        return replace(self, want_duals=want_duals)
