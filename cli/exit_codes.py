"""Exit codes shared by every command."""

from enum import IntEnum


class ExitCode(IntEnum):
    """What a `fleetplan` process tells its caller."""

    OK = 0
    CHECK_FAILED = 1
    """verify found a violation, or batch found a regression."""
    BAD_INPUT = 2
    """The input file or a flag is invalid."""
    INFEASIBLE = 3
    """No plan can meet the requirements (or a configuration does not fit)."""
    TIME_LIMIT = 4
    """The solver found no plan within its time limit."""
    INTERNAL_ERROR = 70
    """A bug in fleetplan (EX_SOFTWARE): an unexpected error, reported in one line."""
