"""The registry of the README's checks and the formats they print figures in.

`checks.py`, `calibration_checks.py` and `deploy_checks.py` register their checks here with
`@check`; `tests.readme.checks.CHECKS` is the registry once all are imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.readme.runner import Runner


@dataclass(frozen=True)
class Check:
    """A README check: `command` is what the README shows (and the check runs, or reads the
    golden result of); `slow` ones run under `make readme`, not `make test`."""

    name: str
    command: str
    compute: Callable[[Runner], dict[str, str] | str]
    slow: bool = False


CHECKS: dict[str, Check] = {}

DEMO = "fleetplan solve instances/chat-3region.yaml"
"""The default instance's solve, which checks in several modules read (run once a session)."""


def check(name: str, command: str, slow: bool = False):
    def register(compute: Callable[[Runner], dict[str, str] | str]):
        CHECKS[name] = Check(name, command, compute, slow)
        return compute

    return register


def usd(value: float) -> str:
    return f"${value:,.0f}"


def pct(share: float, digits: int = 0) -> str:
    return f"{100 * share:.{digits}f}%"


def span(values: list[float], digits: int = 0) -> str:
    """`low-high` of percentages (one number where they round alike)."""
    low, high = (f"{100 * v:.{digits}f}" for v in (min(values), max(values)))
    return f"{low}%" if low == high else f"{low}-{high}%"
