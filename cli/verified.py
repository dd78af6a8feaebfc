"""A plan read from a file is judged before it is drawn or replayed: `report --plan` and
`simulate` act only on a plan the independent verifier accepts (issue 36), so a tampered
figure is never shown as a fact, a pool in a region the instance does not have or another
instance's plan is refused, and a count of 10^12 replicas never reaches a chart or an
event loop (the verifier refuses it before any physics)."""

from pathlib import Path

import typer

from cli.exit_codes import ExitCode
from cli.render.console import err
from models.schema.instance import Instance
from solver.plan.schema import Plan

VIOLATIONS_SHOWN = 20
"""Violations of a refused plan printed on stderr (`verify` lists them all)."""


def require_verified(instance: Instance, plan: Plan, plan_file: Path, command: str) -> None:
    """Return when the verifier accepts `plan` for `instance` (hour by hour for an hourly
    plan); otherwise print why and exit.

    Raises:
        typer.Exit: code 1 (CHECK_FAILED), the violations on stderr.
    """
    from solver.verify.hours import verify_any

    check = verify_any(instance, plan)
    if check.ok:
        return
    shown = check.violations[:VIOLATIONS_SHOWN]
    more = f", the first {len(shown)}" if len(shown) < len(check.violations) else ""
    err.print(
        f"{command} refused: {plan_file} fails the verifier: "
        f"{len(check.violations)} violation(s){more}:",
        markup=False,
    )
    for violation in shown:
        err.print(f"  - {violation}", markup=False)
    raise typer.Exit(ExitCode.CHECK_FAILED)
