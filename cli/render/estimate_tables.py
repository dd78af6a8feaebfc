"""The estimate and the headroom derivation in the shared table spec (`cli.render.tables`):
header lines, tables of strings and a note, printed to the terminal or as Markdown.
Formatting only: every figure comes from `models.calculators.estimate` and
`models.serving.headroom`."""

from cli.render.tables import Report, TableSpec
from models.calculators.estimate import ASSUMED_SOURCE, EstimateResult
from models.schema.quantities import counted
from models.serving.headroom import HeadroomDerivation

STEPS_COLUMNS = ("figure", "formula", "value")
"""The columns of a table of worked steps."""


def _num(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _pct(value: float, digits: int = 1) -> str:
    return f"{value:.{digits}%}"


def _trim_pct(value: float) -> str:
    """A fraction as a percentage without trailing zeros: 0.999 -> 99.9%, 0.001 -> 0.1%."""
    return f"{value * 100:.4f}".rstrip("0").rstrip(".") + "%"


def _hours(value: float) -> str:
    return f"{value:g} h"


def _duration(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours >= 48 and hours % 24 == 0:
        return f"{hours / 24:g} d"
    return f"{hours:g} h"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


# ---- estimate ---------------------------------------------------------------------------


def estimate_report(r: EstimateResult) -> Report:
    """The estimate as tables: assumptions, load, GPUs, logs, M/M/1, error budget, burn
    rates and burn-rate alerts, each worked step with its formula."""
    a = r.assumptions
    header = [
        "fleetplan estimate: back-of-envelope sizing from ILLUSTRATIVE assumptions "
        "(replace them with measurements)",
        f"per-GPU throughput: {r.throughput_source}",
    ]
    modelled = r.throughput_source != ASSUMED_SOURCE
    assumptions = TableSpec(
        "Assumptions",
        ("assumption", "value"),
        (
            ("requests per day", _int(a.requests_per_day)),
            ("peak / average", f"{a.peak_to_average:g}x"),
            (
                "latency per request" + (" (performance model)" if modelled else ""),
                f"{a.latency_s:.3g} s",
            ),
            ("tokens per request", f"{_int(a.input_tokens)} in, {_int(a.output_tokens)} out"),
            (
                "output tokens/s per GPU " + ("(performance model)" if modelled else "(ASSUMED)"),
                _int(a.gpu_tokens_per_s),
            ),
            ("target utilisation at peak", _pct(a.target_utilization, 0)),
            (
                "sequences per GPU " + ("(performance model)" if modelled else "(memory)"),
                f"{a.seqs_per_gpu:.4g}",
            ),
            ("SLO / window", f"{_trim_pct(a.slo)} over {counted(a.window_days, 'day')}"),
        ),
    )
    load = TableSpec(
        "Load",
        STEPS_COLUMNS,
        (
            ("average QPS", f"{_int(a.requests_per_day)} / 86,400", _num(r.avg_qps)),
            ("peak QPS", f"{_num(r.avg_qps)} x {a.peak_to_average:g}", _num(r.peak_qps)),
            (
                "in flight at peak (Little's law L = lambda W)",
                f"{_num(r.peak_qps)} x {a.latency_s:g} s",
                _int(r.in_flight),
            ),
            (
                "peak output tokens/s",
                f"{_num(r.peak_qps)} x {_int(a.output_tokens)}",
                _int(r.peak_output_tokens_per_s),
            ),
        ),
    )
    gpu_rows = [
        (
            "by throughput",
            f"{_int(r.peak_output_tokens_per_s)} / ({_int(a.gpu_tokens_per_s)} x "
            f"{a.target_utilization:g})",
            _num(r.gpus_by_throughput),
        ),
        (
            "by concurrency",
            f"{_int(r.in_flight)} / ({a.seqs_per_gpu:g} x {a.target_utilization:g})",
            _num(r.gpus_by_concurrency),
        ),
        (
            f"with N+1 headroom ({r.binding} binds)",
            f"ceil({_num(r.gpus_fractional)}) + 1 spare"
            if r.gpus_per_replica == 1
            else f"{r.gpus_per_replica} x ceil({_num(r.gpus_fractional)} / "
            f"{r.gpus_per_replica}) + 1 spare replica of {r.gpus_per_replica} GPUs",
            str(r.gpus),
        ),
    ]
    if r.zone_layout is not None and r.zone_overprovision_factor is not None:
        layout = r.zone_layout
        gpu_rows.append(
            (
                f"to survive losing 1 of {layout.zones} zones",
                f"{r.gpus_needed} x {layout.zones}/{layout.zones - 1} "
                f"(x{r.zone_overprovision_factor:.2f}) = "
                f"{' + '.join(map(str, layout.gpus_per_zone))}",
                str(layout.total_gpus),
            )
        )
    logs = TableSpec(
        "Logs (raw request and response text)",
        STEPS_COLUMNS,
        (
            (
                "bytes per request",
                f"({_int(a.input_tokens)} + {_int(a.output_tokens)}) tokens x "
                f"{a.bytes_per_token:g} B",
                f"{_int(r.bytes_per_request)} B",
            ),
            (
                "per day",
                f"{_int(a.requests_per_day)} x {_int(r.bytes_per_request)} B",
                f"{r.log_gb_per_day:.1f} GB",
            ),
            ("per 30 days", f"{r.log_gb_per_day:.1f} GB x 30", f"{r.log_tb_per_30_days:.2f} TB"),
        ),
    )
    mm1 = TableSpec(
        "Utilisation -> mean latency (M/M/1: W = S / (1 - rho), service time S)",
        ("rho", "W"),
        tuple((f"{rho:.2f}", f"{multiplier:.1f} x S") for rho, multiplier in r.mm1),
    )
    budget = TableSpec(
        f"Error budget (SLO {_trim_pct(a.slo)} over {counted(a.window_days, 'day')})",
        STEPS_COLUMNS,
        (
            (
                "full downtime allowed",
                f"{_trim_pct(r.error_budget_fraction)} x {_int(r.window_minutes)} min",
                f"{r.error_budget_minutes:.1f} min",
            ),
            (
                "failed requests allowed",
                f"{_trim_pct(r.error_budget_fraction)} x {_int(r.requests_in_window)} requests",
                _int(r.error_budget_requests),
            ),
        ),
    )
    burn = TableSpec(
        "Burn rate (error rate / budget) and budget used (burn x hours / window hours)",
        ("error rate", "for", "burn rate", "budget used", "budget gone in"),
        tuple(
            (
                _pct(item.error_rate, 2),
                _hours(item.duration_h),
                f"{item.burn_rate:.1f}x",
                _pct(item.budget_consumed),
                "never"
                if item.hours_to_exhaustion == float("inf")
                else f"{item.hours_to_exhaustion:.1f} h",
            )
            for item in r.burn
        ),
    )
    alerts = TableSpec(
        "Multi-window burn-rate alerts (SRE Workbook): fire when both windows exceed",
        ("severity", "budget spent", "long window", "short window", "burn", "error rate"),
        tuple(
            (
                alert.policy.severity,
                _pct(alert.policy.budget_fraction, 0),
                _duration(alert.policy.long_window_h),
                _duration(alert.policy.short_window_h),
                f"{alert.burn_rate:.1f}x",
                _pct(alert.error_rate, 2),
            )
            for alert in r.alerts
        ),
    )
    gpus = TableSpec("GPUs", STEPS_COLUMNS, tuple(gpu_rows))
    return Report(header, [assumptions, load, gpus, logs, mm1, budget, burn, alerts])


# ---- headroom ---------------------------------------------------------------------------

HEADROOM_APPROXIMATION = (
    "Approximation: Poisson arrivals, first come first served, one prompt prefilled at a "
    "time per server; M/G/c wait by Allen-Cunneen with an exponential tail (exact for "
    "M/M/c, the Pollaczek-Khinchine mean for one server); prefill time lognormal with the "
    "prompt's cv; p99 TTFT ~ S + sqrt(W99^2 + (S99 - S)^2) (2% above the exact M/M/1 p99 "
    "at 70%, 4% at 50%). A wider spread scales the wait by (1 + cs^2) / 2 and lengthens "
    "S99, so the same target allows less load."
)


def headroom_report(d: HeadroomDerivation) -> Report:
    """The headroom derivation step by step, then how the prompt spread and the pool size
    move the ceiling. An infeasible target stops after step 3, with no tables."""
    c = d.servers
    pool = "one server" if c == 1 else f"{c} servers behind one queue"
    header = [
        f"fleetplan headroom: how busy can a prefill queue run and keep "
        f"p99 TTFT <= {_ms(d.ttft_p99_s)}? ({pool})",
        f"1. Service time. S = mean prefill time = {_ms(d.prefill_s)}.",
        f"2. Its variability. Prefill time taken as proportional to prompt length, "
        f"so its coefficient of variation is the prompt's: cv = {d.prompt_cv:g}, "
        f"cs^2 = cv^2 = {d.service_scv:.2f}; lognormal like the prompt lengths, its p99 is "
        f"S99 = {_ms(d.service_p99_s)}: the p99 TTFT with no queue at all.",
        "3. The wait's budget. p99 TTFT ~ S + sqrt(W99^2 + (S99 - S)^2): the mean "
        "prefill, then the wait's tail and the prefill's own tail in quadrature (exact with "
        "no queue and with fixed lengths; the capacity model combines them the same way).",
    ]
    if d.wait_budget_s < 0:
        header.append(
            f"infeasible: the prefill alone has p99 {_ms(d.service_p99_s)}, over "
            f"the {_ms(d.ttft_p99_s)} target; no load meets it. Shorten prefill (a faster GPU, "
            "more TP, prefix caching, splitting long prompts) or relax the target."
        )
        return Report(header, [])
    one = " (= rho for one server)" if c == 1 else ""
    rate_text = f"{d.requests_per_s_per_server:,.2f} requests/s per server"
    if c > 1:
        rate_text += f", {d.requests_per_s:,.2f} for the pool"
    header += [
        f"     so W99 <= sqrt(({_ms(d.ttft_p99_s)} - {_ms(d.prefill_s)})^2 - "
        f"({_ms(d.service_p99_s)} - {_ms(d.prefill_s)})^2) = {_ms(d.wait_budget_s)}.",
        "4. The p99 wait at utilisation rho (M/G/c, Allen-Cunneen with an exponential tail):",
        f"     P(wait)  = C(c, c rho), Erlang C{one}",
        "     m        = S (1 + cs^2) / (2 c (1 - rho)), the mean wait of those who wait",
        "     p99 wait = m ln(P(wait) / 0.01), or 0 when P(wait) <= 1%",
        f"5. The ceiling. The largest rho with p99 wait <= {_ms(d.wait_budget_s)}: "
        f"rho = {_pct(d.utilization)}.",
        f"     there P(wait) = {_pct(d.p_wait)}, m = {_ms(d.conditional_wait_s)}, "
        f"p99 wait = {_ms(d.wait_p99_s)}",
        f"     so at most {rate_text} (rho c / S).",
    ]
    widest = d.by_cv[-1]
    spread_note = ""
    if widest.prompt_cv > d.prompt_cv:
        here = next(row for row in d.by_cv if row.prompt_cv == d.prompt_cv)
        spread_note = (
            f"A heavier spread, cv {d.prompt_cv:g} -> {widest.prompt_cv:g}, takes the ceiling "
            f"from {_pct(here.utilization)} to {_pct(widest.utilization)}."
        )
    spread = TableSpec(
        f"Prompt-length spread lowers the ceiling ({pool})",
        ("prompt cv", "cs^2", "prefill p99", "ceiling", "requests/s"),
        tuple(
            (
                f"{row.prompt_cv:g}" + (" <" if row.prompt_cv == d.prompt_cv else ""),
                f"{row.service_scv:.2f}",
                _ms(row.service_p99_s),
                _pct(row.utilization),
                f"{row.requests_per_s:,.2f}",
            )
            for row in d.by_cv
        ),
        spread_note,
    )
    pools = TableSpec(
        f"Pooling raises it (cv {d.prompt_cv:g}): c servers behind one queue",
        ("servers", "ceiling", "requests/s per server", "requests/s in all"),
        tuple(
            (
                f"{row.servers}" + (" <" if row.servers == d.servers else ""),
                _pct(row.utilization),
                f"{row.requests_per_s_per_server:,.2f}",
                f"{row.requests_per_s:,.2f}",
            )
            for row in d.by_servers
        ),
    )
    return Report(header, [spread, pools], HEADROOM_APPROXIMATION)
