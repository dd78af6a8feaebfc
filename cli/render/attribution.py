"""The plan's cost attribution as a table (solve, explain, report)."""

from cli.render.summary_tables import month_zero
from cli.render.tables import TableSpec
from solver.plan.schema import Plan

ATTRIBUTION_NOTE = (
    "each GPU type's bill in a region (whole servers bought, idle GPUs included) shared "
    "among the pools on it by their GPUs (a shared group's share to its members by load "
    "over the group's capacity for each), split by phase with the step model (unified "
    "pools: Shapley split of one iteration; a group's evenly); $/Mtok over the tokens "
    "served at the average rate"
)
HOURLY_ATTRIBUTION_NOTE = (
    "each hour's bill as paid (every committed GPU at the reserved price, on-demand and spot "
    "GPUs at theirs) shared among the pools holding that GPU type that hour (a shared "
    "group's share to its members by load over capacity), split by phase with the step "
    "model; $/Mtok over the day's tokens served"
)


def attribution_table(plan: Plan) -> TableSpec:
    """Per workload and region: $/month, prefill and decode shares, $/Mtok, the bill."""

    def usd(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    return TableSpec(
        month_zero(plan, "Cost attribution"),
        (
            "workload",
            "region",
            "$/month",
            "prefill",
            "decode",
            "$/M input tok",
            "$/M output tok",
            "prefill GPU-h",
            "decode GPU-h",
            "bill",
        ),
        tuple(
            (
                a.workload,
                a.region,
                f"{a.cost_per_month:,.0f}",
                f"{a.prefill_share:.0%}",
                f"{a.decode_share:.0%}",
                usd(a.usd_per_million_input_tokens),
                usd(a.usd_per_million_output_tokens),
                f"{a.prefill_gpu_hours_per_month:,.0f}",
                f"{a.decode_gpu_hours_per_month:,.0f}",
                a.bill + (" (offline)" if a.offline else ""),
            )
            for a in plan.cost_attribution
        ),
        HOURLY_ATTRIBUTION_NOTE if plan.hours else ATTRIBUTION_NOTE,
    )
