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

Imports: models.schema.backend_names (the one list of names), solver.program.lp (the
solver-neutral program a backend is handed), solver.settings and solver.progress (where
HiGHS reports its incumbent and gap); nothing else of fleetplan, so that a backend sees only
the program, never the instance.
"""

import importlib

from models.schema.backend_names import BACKEND_NAMES, DEFAULT_BACKEND
from solver.backends.base import (
    DEFAULT_MIP_GAP,
    Backend,
    Capabilities,
    SolveOptions,
    relative_gap,
)

_MODULES: dict[str, tuple[str, str]] = {
    "highs": ("solver.backends.highs", "HighsBackend"),
    "cbc": ("solver.backends.cbc", "CbcBackend"),
    "scip": ("solver.backends.scip", "ScipBackend"),
    "cpsat": ("solver.backends.cpsat", "CpSatBackend"),
}
"""Backend name -> (module, class): a backend's module is imported only when it is asked
for, so a `highs` solve never loads the OR-Tools or PuLP wrappers."""
if tuple(_MODULES) != BACKEND_NAMES:  # the one list (models.schema.backend_names) is the truth
    raise RuntimeError(f"backends {tuple(_MODULES)} differ from {BACKEND_NAMES}")


def _backend_class(name: str) -> type[Backend]:
    module, attribute = _MODULES[name]
    backend: type[Backend] = getattr(importlib.import_module(module), attribute)
    if backend.name != name:
        raise RuntimeError(f"backend class {attribute} is named {backend.name!r}, not {name!r}")
    return backend


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
    return tuple(_MODULES)


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
    if key not in _MODULES:
        raise UnknownBackendError(name)
    return _backend_class(key)()


def available_backends() -> tuple[str, ...]:
    """Names of the backends that can solve in this environment, the default first."""
    return tuple(name for name in _MODULES if get_backend(name).is_available())


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
