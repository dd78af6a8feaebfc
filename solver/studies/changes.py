"""What moved between a batch outcome and its golden result, as the check's lines say it.

Read by solver.studies.batch's `compare` on its Outcome and Golden records (any object with
the fields below: the records are defined there, and this module does not import it).
"""

from typing import Protocol

from solver.studies.fingerprint import Fingerprint

IDLE_NOTE = 0.001
"""A change of the idle fraction (over the GPUs paid) noted against the golden: 0.1%,
the precision it is frozen at."""


class Counts(Protocol):
    """The fields an outcome and a golden both record."""

    gpus_bought: int | None
    idle_fraction: float | None
    fingerprint: Fingerprint | None
    binding_families: tuple[str, ...] | None


def count_changes(outcome: Counts, golden: Counts) -> list[str]:
    """Notes on GPUs bought and the idle share moving against a golden that records them
    (not regressions on their own: an alternative optimum may buy other servers)."""
    notes = []
    bought = (golden.gpus_bought, outcome.gpus_bought)
    if None not in bought and bought[0] != bought[1]:
        notes.append(f"GPUs bought: {golden.gpus_bought} -> {outcome.gpus_bought}")
    idle = (golden.idle_fraction, outcome.idle_fraction)
    if idle[0] is not None and idle[1] is not None and abs(idle[1] - idle[0]) > IDLE_NOTE:
        notes.append(
            f"idle at peak: {golden.idle_fraction:.1%} -> {outcome.idle_fraction:.1%} "
            "of the GPUs paid"
        )
    return notes


def binding_change(outcome: Counts, golden: Counts) -> str:
    """The line naming the binding families that moved ("" when none did, or when either
    side's are unknown: a plan whose pricing the time limit skipped states no shadow
    prices, so which families bind is not known and not a change)."""
    if outcome.binding_families is None or golden.binding_families is None:
        return ""
    added = sorted(set(outcome.binding_families) - set(golden.binding_families))
    removed = sorted(set(golden.binding_families) - set(outcome.binding_families))
    if not added and not removed:
        return ""
    return (
        "binding families changed:"
        + (f" now binding {', '.join(added)}" if added else "")
        + (f" no longer binding {', '.join(removed)}" if removed else "")
    )


def input_changed(outcome: Counts, golden: Counts) -> str:
    """The line naming what changed since the golden was solved ("" when nothing did, or
    either side's fingerprint is unknown)."""
    if outcome.fingerprint is None or golden.fingerprint is None:
        return ""
    parts = outcome.fingerprint.changes_from(golden.fingerprint)
    if not parts:
        return ""
    was, now = golden.fingerprint, outcome.fingerprint
    said = [f"version {was.version} -> {now.version}" if p == "version" else p for p in parts]
    return (
        f"input changed since the golden was frozen: {', '.join(said)}; a difference may "
        "be the new input's answer (check the plan, then --update)"
    )


def gpu_changes(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
) -> list[tuple[str, str, int, int]]:
    """(GPU, region, GPUs before, GPUs after) where the count moved, sorted."""
    changes = []
    for gpu in sorted(set(before) | set(after)):
        regions = set(before.get(gpu, {})) | set(after.get(gpu, {}))
        for region in sorted(regions):
            old = before.get(gpu, {}).get(region, 0)
            new = after.get(gpu, {}).get(region, 0)
            if old != new:
                changes.append((gpu, region, old, new))
    return changes
