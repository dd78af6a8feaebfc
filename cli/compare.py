"""`fleetplan compare`: the cost-ledger audit of a proposed change."""

from pathlib import Path
from typing import Annotated

import typer

from cli.exit_codes import ExitCode
from cli.options import JsonOut, MarkdownOut, check_not_read_by, known_backend, to_stdout
from cli.render.console import err, out
from cli.render.tables import Report, TableSpec
from cli.render.zeros import json_without_negative_zero
from models.io.loading import load_instance
from models.io.output_files import check_targets, is_stdout, write_text
from models.io.output_kinds import JSON, MARKDOWN
from models.schema.quantities import counted
from solver.analysis.compare import (
    Comparison,
    Side,
    compare_instances,
    horizons_differ,
    judged_costs,
)


def compare(
    base: Annotated[Path, typer.Argument(help="The instance as it is today.")],
    candidate: Annotated[Path, typer.Argument(help="The changed instance (same demand).")],
    backend: Annotated[
        str | None, typer.Option(help="Solver backend for both.", callback=known_backend)
    ] = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
) -> None:
    """Compare two instances on the same demand; adopt the candidate only past every gate.

    Exit 0: adopt (with a rollout). Exit 1: reject, with the reasons.
    """
    check_targets(((json_out, JSON), (markdown_out, MARKDOWN)), inputs=(base, candidate))
    instances = load_instance(base), load_instance(candidate)
    for instance in instances:
        check_not_read_by(instance, (json_out, markdown_out))
    result = compare_instances(*instances, backend)
    report = comparison_report(result)
    report.print(err if to_stdout(json_out, markdown_out) else out)
    if json_out is not None:
        text = json_without_negative_zero(result.model_dump_json(indent=2))
        write_text(json_out, text, inputs=(base, candidate), kind=JSON)
        if not is_stdout(json_out):
            err.print(f"wrote {json_out}", markup=False)
    if markdown_out is not None:
        write_text(markdown_out, report.markdown(), inputs=(base, candidate), kind=MARKDOWN)
        if not is_stdout(markdown_out):
            err.print(f"wrote {markdown_out}", markup=False)
    if result.decision != "adopt":
        raise typer.Exit(ExitCode.CHECK_FAILED)


def comparison_report(result: Comparison) -> Report:
    """The decision, the ledger side by side, and the rollout."""
    b, c = result.base, result.candidate
    rows = [
        ("$/month", _money(b.cost_per_month), _money(c.cost_per_month)),
        *(
            [("$ over the horizon", _horizon(b), _horizon(c))]
            if b.horizon_cost is not None or c.horizon_cost is not None
            else []
        ),
        ("GPUs used", _text(b.total_gpus), _text(c.total_gpus)),
        ("GPUs paid (bought + owned in use)", _text(b.gpus_paid), _text(c.gpus_paid)),
        (
            "$/GPU-hour (blended over GPUs paid)",
            _usd(b.usd_per_gpu_hour, 2),
            _usd(c.usd_per_gpu_hour, 2),
        ),
        (
            "$/million tokens at the SLO",
            _usd(b.usd_per_million_tokens, 3),
            _usd(c.usd_per_million_tokens, 3),
        ),
        ("prefill share of cost", _pct(b.prefill_share), _pct(c.prefill_share)),
        ("utilisation (mean, no failure)", _pct(b.utilisation_mean), _pct(c.utilisation_mean)),
        ("utilisation (max pool)", _pct(b.utilisation_max), _pct(c.utilisation_max)),
        ("headroom to p99 (worst scenario)", _pct(b.p99_headroom), _pct(c.p99_headroom)),
        ("GPU types", ", ".join(b.gpu_types), ", ".join(c.gpu_types)),
        ("verifier", _verdict(b), _verdict(c)),
    ]
    _, _, basis = judged_costs(b, c)
    differ = horizons_differ(b, c)
    if differ:
        note = f"judged per month, {differ}: every row but '$ over the horizon' is month 0's"
    elif basis != "per month":
        note = (
            f"judged {basis}: GPUs used and paid in its busiest month; $/GPU-hour, "
            "$/million tokens, utilisation and headroom over all its months; prefill share "
            "month 0's (a later month's plan carries no cost split)"
        )
    else:
        note = ""
    tables = [
        TableSpec(
            "Ledger", ("", result.base.instance, result.candidate.instance), tuple(rows), note
        ),
        TableSpec("Reasons", ("reason",), tuple((r,) for r in result.reasons)),
    ]
    rollout = result.rollout
    if rollout:
        tables.append(
            TableSpec(
                "Rollout: metrics to watch",
                ("metric", "threshold"),
                tuple((w["metric"], threshold_text(w)) for w in rollout["watch"]),
                f"canary {rollout['canary_share']:.0%}, stages "
                + " -> ".join(f"{s:.0%}" for s in rollout["stages"])
                + "; "
                + rollout["promote"],
            )
        )
        tables.append(
            TableSpec("Rollback when", ("criterion",), tuple((r,) for r in rollout["rollback"]))
        )
    return Report([f"compare: {result.decision.upper()}"], tables)


def threshold_text(watch: dict) -> str:
    """A watched metric's rollback threshold as it reads: "above 1,000 ms" for a p99,
    "above $0.093" for the $ per million tokens, "above 14.4x" for a burn rate, "change
    below -1" for a quality metric."""
    if "threshold_ms" in watch:
        return f"above {watch['threshold_ms']:,g} ms"
    if "threshold_delta" in watch:
        return f"change below {watch['threshold_delta']:+g}"
    value = watch.get("threshold")
    if value is None:
        return "-"
    if watch["metric"].startswith("$"):
        return f"above ${value:,.3f}"
    return f"above {value:g}x"


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _horizon(side: Side) -> str:
    if side.horizon_cost is None:
        return "-"
    return f"${side.horizon_cost:,.0f} ({counted(side.horizon_months or 0, 'month')})"


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def _usd(value: float | None, digits: int) -> str:
    return "-" if value is None else f"${value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _verdict(side: Side) -> str:
    if side.cost_per_month is None:
        return side.status
    return "ok" if not side.violations else counted(len(side.violations), "violation")
