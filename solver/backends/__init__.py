"""Solver backends behind one interface, looked up by name.

    backend = get_backend("highs")
    result = backend.solve(lp, time_limit_s=60, mip_gap=1e-4, threads=1)

| name    | library                     | integer | duals | continuous variables       |
|---------|-----------------------------|---------|-------|----------------------------|
| `highs` | HiGHS via highspy (default) | yes     | yes   | exact                      |
| `cbc`   | CBC via PuLP's command line | yes     | yes   | exact                      |
| `scip`  | SCIP via OR-Tools MathOpt   | yes     | no    | exact                      |
| `cpsat` | CP-SAT via OR-Tools MathOpt | yes     | no    | on a grid, bound kept sound |

A backend that cannot give duals leaves `SolveResult.duals` empty and says so in the
message; the caller gets shadow prices from `highs`. No module here imports a solver
library at import time, and the OR-Tools backends never load OR-Tools' own HiGHS
(it crashes a process that has imported highspy).
"""

from models.backend_names import BACKEND_NAMES, DEFAULT_BACKEND
from solver.backends.base import (
    DEFAULT_MIP_GAP,
    Backend,
    Capabilities,
    SolveOptions,
    relative_gap,
)
from solver.backends.cbc import CbcBackend
from solver.backends.cpsat import CpSatBackend
from solver.backends.highs import HighsBackend
from solver.backends.scip import ScipBackend

_REGISTRY: dict[str, type[Backend]] = {
    backend.name: backend for backend in (HighsBackend, CbcBackend, ScipBackend, CpSatBackend)
}
if tuple(_REGISTRY) != BACKEND_NAMES:  # the one list (models.backend_names) is the truth
    raise RuntimeError(f"backends {tuple(_REGISTRY)} differ from {BACKEND_NAMES}")


class UnknownBackendError(ValueError):
    """A backend name that is not registered; the message lists the choices."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.choices = backend_names()
        super().__init__(
            f"unknown solver backend {name!r}; choose one of {', '.join(self.choices)}"
        )


def backend_names() -> tuple[str, ...]:
    """Every registered backend name, the default first."""
    return tuple(_REGISTRY)


def get_backend(name: str = DEFAULT_BACKEND) -> Backend:
    """The backend registered under `name` (case-insensitive).

    Args:
        name: One of `backend_names()`.

    Returns:
        A backend instance; check `is_available()` before relying on it (an unavailable
        backend's `solve` returns `Termination.ERROR` with `unavailable_reason()`).

    Raises:
        UnknownBackendError: No backend has that name.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in _REGISTRY:
        raise UnknownBackendError(name)
    return _REGISTRY[key]()


def available_backends() -> tuple[str, ...]:
    """Names of the backends that can solve in this environment, the default first."""
    return tuple(name for name, backend in _REGISTRY.items() if backend().is_available())


__all__ = [
    "DEFAULT_BACKEND",
    "DEFAULT_MIP_GAP",
    "Backend",
    "Capabilities",
    "SolveOptions",
    "UnknownBackendError",
    "available_backends",
    "backend_names",
    "get_backend",
    "relative_gap",
]
