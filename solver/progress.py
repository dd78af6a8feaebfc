"""Progress of long work: the stage a run has reached, and while the MIP solves its
incumbent, bound and gap, once the run is past `QUIET_S` seconds (a short solve says
nothing).

The solver never prints (STYLE.md): it logs to the `fleetplan.progress` logger, and the
CLI sends that logger to stderr (cli/app.py), so `--json -` on stdout stays pure JSON.
Nothing is computed for a logger no one listens to: the HiGHS callback is installed only
when the logger is enabled for INFO.

Messages, at most one per `EVERY_S` per kind:

    progress: run at 1.4 s: in candidates
    progress: run at 3.1 s: candidates done
    progress: MIP solve at 2.3 s: incumbent 67,434, bound 65,210, gap 3.30%

A note held for a long run (`hold`: which list sets the program's size,
solver.candidates.list_sizes) is told once, before the first message past QUIET_S; a run
that ends sooner never tells it, and the next run started in the process forgets it:

    progress: policy.tensor_parallel adds 7 of 11 candidates (TP 1: 4, TP 4: 4, TP 2: 3); ...

(a stage's time from the run's start, a MIP's from its own; incumbent and bound in the
objective's unit, $/month plus the tie-breaks). A check from inside a stage (the candidate
table's per configuration, the program build's per family but the last) says `in STAGE`:
said `STAGE done`, a 15 s table told "candidates done" fifteen times.
"""

import logging
import time

QUIET_S = 2.0
"""Seconds of a run before it reports progress."""
EVERY_S = 1.0
"""Least seconds between two messages of the same kind."""
LOG = logging.getLogger("fleetplan.progress")
_HELD: list[str] = []
"""Notes of the run under way in this process, told with its first message."""
_NOTED: set[str] = set()
"""Every note held since the run started (a month's stages hold it again: told once)."""


def listening() -> bool:
    """Whether anyone reads progress (the CLI's stderr handler, a test's caplog)."""
    return LOG.isEnabledFor(logging.INFO)


def hold(note: str) -> None:
    """Tell `note` with the run's first progress message (nothing when no one listens)."""
    if listening() and note not in _NOTED:
        _NOTED.add(note)
        _HELD.append(note)


def forget_held() -> None:
    """Drop the notes of an earlier run (a new run starts)."""
    _HELD.clear()
    _NOTED.clear()


def _tell_held() -> None:
    while _HELD:
        LOG.info("progress: %s", _HELD.pop(0))


class StageReporter:
    """Reports the stages a run passes (`SolveSettings.check`), rate-limited."""

    def __init__(self) -> None:
        self.last_s = -EVERY_S
        self.last_stage: tuple[str, bool] = ("", False)

    def passed(self, stage: str, elapsed_s: float, within: bool = False) -> None:
        """Log `stage` done (`within`: the run still in it) at `elapsed_s` of the run, past
        QUIET_S, once per stage and kind or EVERY_S."""
        if elapsed_s < QUIET_S or not listening():
            return
        if (stage, within) == self.last_stage and elapsed_s - self.last_s < EVERY_S:
            return
        self.last_s, self.last_stage = elapsed_s, (stage, within)
        _tell_held()
        if within:
            LOG.info("progress: run at %.1f s: in %s", elapsed_s, stage)
        else:
            LOG.info("progress: run at %.1f s: %s done", elapsed_s, stage)


class IncumbentReporter:
    """A HiGHS MIP callback (kCallbackMipInterrupt, kCallbackMipImprovingSolution): the
    incumbent, the dual bound and the gap, `offset` (the objective's constant) added,
    past QUIET_S of the run that started at `run_start` (time.monotonic())."""

    def __init__(self, run_start: float, offset: float = 0.0) -> None:
        self.run_start = run_start
        self.offset = offset
        self.last_s = -EVERY_S

    def __call__(self, callback_type, message, data_out, data_in, user_data) -> None:
        elapsed = time.monotonic() - self.run_start
        if elapsed < QUIET_S or elapsed - self.last_s < EVERY_S:
            return
        incumbent = data_out.mip_primal_bound
        if not abs(incumbent) < 1e30:  # no incumbent yet
            return
        self.last_s = elapsed
        _tell_held()
        LOG.info(
            "progress: MIP solve at %.1f s: incumbent %s, bound %s, gap %.2f%%",
            elapsed,
            f"{incumbent + self.offset:,.0f}",
            f"{data_out.mip_dual_bound + self.offset:,.0f}"
            if abs(data_out.mip_dual_bound) < 1e30
            else "-",
            100 * min(data_out.mip_gap, 1.0),
        )
