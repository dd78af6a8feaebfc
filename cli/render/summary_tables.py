"""The buyer's summary (solver.plan.records.BuyerSummary) as one two-column table, the
first thing the terminal, the Markdown and the HTML report show."""

from cli.render.tables import TableSpec
from solver.plan.binding import Binding
from solver.plan.records import RegionPower
from solver.plan.schema import Plan, gap_percent


def idle_wording(plan: Plan) -> str:
    """What `idle_fraction` covers in each horizon: the peak hour of a static plan, the
    day's paid GPU-hours of an hourly plan, month 0's day where the months table states
    each month's."""
    if plan.months:
        return "idle over month 0's day"
    if plan.hours:
        return "idle over the day"
    return "idle at peak"


MONTH_ZERO = " (month 0)"
"""Said after the title of a table of a plan of months that shows month 0's figures
(its peak fleet, day, cost split, utilisation, binding rows): the months tables state
the horizon."""


def month_zero(plan: Plan, title: str) -> str:
    """`title`, with `MONTH_ZERO` after it in a plan of months."""
    return title + MONTH_ZERO if plan.months else title


def _gap(gap: float | None) -> str:
    return "gap unknown" if gap is None else f"gap {gap_percent(gap)}"


MONTH_ZERO_EXPLAINED = (
    "a plan of months is explained at month 0: its program's binding rows and re-solves, its "
    "fleet, hours and scenarios (each month's are in the months tables); the levers re-solve "
    "the whole horizon"
)
"""What `explain` reads of a plan of months (solver.time.alternatives: month 0's program)."""


def cost_words(cost_per_month: float, plan: Plan) -> str:
    """A plan's $/month as its figures cover it: a plan of months states month 0's and its
    horizon's sum (`cost_per_month` is month 0's there), a static or hourly plan its own."""
    words = f"${cost_per_month:,.0f}/month"
    if plan.months and plan.horizon_cost is not None:
        words += f" (month 0); ${plan.horizon_cost:,.0f} over the {len(plan.months)}-month horizon"
    return words


def summary_table(plan: Plan) -> TableSpec | None:
    """What it costs, what is bought where, which servers to order when, what binds."""
    s = plan.summary
    if s is None:
        return None
    cost = f"${s.cost_per_month or 0:,.0f}/month"
    if s.horizon_months:
        cost += f" (month 0); ${s.horizon_cost or 0:,.0f} over the {s.horizon_months}-month horizon"
    counts = f"{s.gpus_bought:,} bought, {s.gpus_used:,} used"
    if s.idle_fraction is not None:
        counts += f"; {idle_wording(plan)} {s.idle_fraction:.1%} of the GPUs paid"
    rows = [("cost", cost), ("GPUs", counts)]
    by_region: dict[str, list[str]] = {}
    for b in s.bought:
        by_region.setdefault(b.region, []).append(f"{b.bought} {b.gpu} ({b.used} used)")
    rows += [(f"bought in {region}", ", ".join(items)) for region, items in by_region.items()]
    if s.orders:
        lines = [
            f"{o.servers} x {o.gpus_per_server}-GPU {o.gpu} server{'' if o.servers == 1 else 's'} "
            f"for {o.region}"
            + (
                f", order in month {o.order_month} (serving from month {o.serving_from_month})"
                if s.horizon_months
                else ", order now"
            )
            for o in s.orders
        ]
        rows += [("servers to order" if i == 0 else "", line) for i, line in enumerate(lines)]
    if s.stopped_months:
        gaps = {m.month: m for m in plan.months}
        stopped = ", ".join(
            f"month {m} ({_gap(gaps[m].mip_gap)})" for m in s.stopped_months if m in gaps
        )
        rows.append(("stopped at the time limit", f"{stopped}: each its best plan then"))
    if s.binding:
        rows += [
            ("what binds" if i == 0 else "", binding_words(b, s.horizon_months > 0))
            for i, b in enumerate(s.binding)
        ]
    else:
        rows.append(("what binds", "no priced constraint (see the binding table)"))
    return TableSpec("Summary", ("", "the plan"), tuple(rows))


def binding_words(b: Binding, months: bool = False) -> str:
    """A binding row in a line: its price, or where it binds in whole units, the slack
    left against one unit (not priced); `months`: the month it binds from."""
    if not b.in_whole_units:
        return f"{b.name}: {b.shadow_price:,.2f} {b.unit}"
    return (
        f"{b.name}: binds in whole units"
        + (f" from month {b.month}" if months and b.month is not None else "")
        + f": {whole_unit_words(b)}"
    )


def whole_unit_words(b: Binding) -> str:
    """`6.40 kW left, less than one 8-GPU h100-sxm server (10.20 kW); not priced` (the
    row's own unit: what its dual is priced per)."""
    per = b.unit.partition(" per ")[2]
    amount = f" {per}" if per else ""
    return (
        f"{b.slack:,.2f}{amount} left, less than {b.whole_unit_of} "
        f"({b.whole_unit:,.2f}{amount}); not priced"
    )


def power_price_words(p: RegionPower) -> str:
    """A region's $/month per kW, or where its cap binds in whole units, the kW left
    against one more server's (not priced); `-` without a cap."""
    if p.limit_kw is None or p.shadow_price_per_kw is None:
        return "-"
    if p.whole_unit_kw:
        return (
            f"in whole units: {p.slack_kw:,.1f} kW left, less than one more server "
            f"({p.whole_unit_kw:,.1f} kW); not priced"
        )
    return f"{p.shadow_price_per_kw:,.2f}"


def price_text(usd_per_gpu_hour: float) -> str:
    """A price per GPU-hour as the instance gives it: to the cent where that is exact
    ("2.40"), else to the digits it has, at most four ("2.125", "0.001"): the plan states
    $2.125, and a table's "2.12" read as another price than the JSON's."""
    cents = f"{usd_per_gpu_hour:.2f}"
    if abs(float(cents) - usd_per_gpu_hour) < 1e-9:
        return cents
    return f"{usd_per_gpu_hour:.4f}".rstrip("0")
