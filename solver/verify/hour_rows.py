"""The hour verifier's check of where each stated binding row lies in time (part of
solver.verify.hours, held to its rule: from solver/ it reads the plan schema, the row
names and the verifier only). A row's slack and shadow price are the program's (held
finite only), but its place in time is the plan's own:

- `period` is None for a row that joins the periods (commitments, batch work), else
  the first UTC hour of a period the hours it belongs to run: an hour p whose
  `period` is p (the plan's hours for `binding`, month m's hours for
  `months[m].binding`); the period mark of its name (`@tHH`,
  solver.program.row_names) says the same (none for None);
- `month` is None in a plan without months; with policy.horizon_months, the month
  whose program the row is in (0 for the plan's own rows, m for month m's), and the
  month mark of its name, where written, says the same month.
"""

from solver.plan.records import Binding
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.program.row_names import split_timed
from solver.verify.verdict import Verification, Violation


def check_binding_times(plan: Plan) -> list[Violation]:
    """Every binding row of the plan and of each month against the hours it lies in (a
    plan without hours has none: each row states no period)."""
    with_months = bool(plan.months)
    found = _rows("binding", plan.binding, plan.hours, 0 if with_months else None)
    if [month.month for month in plan.months] != list(range(len(plan.months))):
        return found  # months out of order: refused on that alone (solver.verify.months)
    for index, month in enumerate(plan.months):
        if month.month == 0:
            continue  # month 0's rows are the plan's own (`binding`)
        hours = month.hours
        found += _rows(f"months[{index}].binding", month.binding, hours, month.month)
    return found


def with_binding_times(verdict: Verification, plan: Plan) -> Verification:
    """A static plan's `verdict` with its binding rows' places in time
    (`check_binding_times`): chat-3region's plan with binding[6].period edited to
    123456789, or a month set on a plan without months, verified ok, as the static
    verifier reads no row's time. An hourly plan's verdict (`verify_hours`) has them."""
    rows = [] if plan.hours else check_binding_times(plan)
    if not rows:
        return verdict
    update = {"ok": False, "violations": (*verdict.violations, *rows)}
    return verdict.model_copy(update=update)


def _period(period: int | None) -> str:
    """`period 5`, or what None means: a row that joins the periods, a name without
    `@tHH` (it said 'its name says None')."""
    return "no period" if period is None else f"period {period}"


def _rows(
    where: str, rows: tuple[Binding, ...], hours: tuple[Hour, ...], month: int | None
) -> list[Violation]:
    periods = {hour.hour for hour in hours if hour.period == hour.hour}
    found = []
    for index, row in enumerate(rows):
        _, named_period, named_month = split_timed(row.name)
        at = f"{where}[{index}]"
        placed = row.period is None or row.period in periods
        if not placed or named_period != row.period:
            found.append(
                Violation(
                    requirement=f"{at}.period",
                    message=f"{row.name} states {_period(row.period)}; its name says "
                    f"{_period(named_period)}, and "
                    + (
                        f"the hours' periods start at {sorted(periods)}"
                        if hours
                        else "the plan has no hours (a static plan's one period is the day)"
                    ),
                )
            )
        month_ok = row.month == month and named_month in (None, month)
        if not month_ok:
            found.append(
                Violation(
                    requirement=f"{at}.month",
                    message=f"{row.name} states "
                    f"{'no month' if row.month is None else f'month {row.month}'}; it is a row of "
                    f"{'the plan' if month is None else f'month {month}'}",
                )
            )
    return found
