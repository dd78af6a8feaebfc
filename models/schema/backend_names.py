"""The names of the solver backends, in one place.

The instance schema (`solver.backend`), the backend registry (`solver.backends`) and
the command line's help all read this list; models/ cannot import solver/, so the list
lives here and the registry checks at import that it registers exactly these names.
"""

from typing import Literal, get_args

BackendName = Literal["highs", "cbc", "scip", "cpsat"]
"""A backend name as the instance file and `--backend` spell it."""

BACKEND_NAMES: tuple[str, ...] = get_args(BackendName)
"""Every backend name, the default first."""

DEFAULT_BACKEND: BackendName = "highs"
"""The backend used when neither the instance nor the command line names one."""
