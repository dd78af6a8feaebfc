"""Commands `solve`, `verify` and `explain`: parse, call one solver function, render.

Exit codes: 0 solved (or verified), 1 verify found violations, 2 bad input, 3
infeasible (with the diagnosis), 4 no plan within the time limit.
"""

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from cli.console import err, out, write_new_file
from cli.exit_codes import ExitCode
from cli.tables import TableSpec, markdown_tables, print_tables
from models.backend_names import BACKEND_NAMES
from models.errors import InputError, Issue
from models.instance import SolverSettings
from models.loading import load_instance, read_document
from solver.backends import UnknownBackendError
from solver.errors import BackendUnavailable, Diagnosis, Infeasible, NoSolution, PlanRejected
from solver.explain import Explanation, explain_solved
from solver.plan import Plan
from solver.settings import SolveSettings
from solver.solve import Solved, solve_program
from solver.verify import Verification
from solver.verify import verify as verify_plan

BINDING_ROWS_SHOWN = 20
"""Binding constraints printed in the terminal (all of them go to --json)."""

InstanceFile = Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")]
BackendOption = Annotated[
    str | None,
    typer.Option(help=f"Solver backend: {', '.join(BACKEND_NAMES)} (default: the instance's)."),
]
TimeLimit = Annotated[
    float | None,
    typer.Option("--time-limit", min=0.001, help="Solver time limit, seconds."),
]
MipGap = Annotated[
    float | None,
    typer.Option("--mip-gap", min=0.0, max=0.999, help="Relative MIP gap to stop at."),
]
Threads = Annotated[
    int | None, typer.Option(min=1, help="Solver threads (default: the instance's, usually 1).")
]
JsonOut = Annotated[
    Path | None, typer.Option("--json", help="Also write the result as JSON to this file.")
]
MarkdownOut = Annotated[
    Path | None,
    typer.Option("--markdown", help="Also write the result as Markdown to this file."),
]


def solve(
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
) -> None:
    """Find the cheapest fleet that meets the instance's SLOs and failure policy."""
    plan = _solve(file, backend, time_limit, mip_gap, threads).plan
    _report(plan_header(plan), plan_tables(plan), plan, json_out, markdown_out)


def explain(
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
) -> None:
    """Solve, then explain the plan: what binds, at what price, and what else would cost."""
    explanation = explain_solved(_solve(file, backend, time_limit, mip_gap, threads))
    header = [
        f"{explanation.instance}: explanation of the plan at "
        f"${explanation.cost_per_month:,.0f}/month"
    ]
    _report(header, explanation_tables(explanation), explanation, json_out, markdown_out)


def verify(
    file: InstanceFile,
    plan_file: Annotated[
        Path, typer.Argument(help='Plan JSON (from `solve --json`, or {"replicas": [...]}).')
    ],
) -> None:
    """Check a plan, or a fleet you own, against the instance with the physics alone."""
    instance = load_instance(file)
    result = verify_plan(instance, _read_plan(plan_file))
    _print_verification(plan_file, result)
    if not result.ok:
        raise typer.Exit(ExitCode.CHECK_FAILED)


# --- the one library call, and its failures -------------------------------------------


def _solve(
    file: Path,
    backend: str | None,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
) -> Solved:
    instance = load_instance(file)
    _check_flags(time_limit, mip_gap, threads)
    settings = SolveSettings.of(instance, backend, time_limit, mip_gap, threads)
    try:
        return solve_program(instance, settings)
    except Infeasible as infeasible:
        _print_diagnosis(file, infeasible.diagnosis)
        raise typer.Exit(ExitCode.INFEASIBLE) from None
    except (UnknownBackendError, BackendUnavailable) as error:
        raise InputError([Issue("--backend", None, "", str(error))]) from None
    except PlanRejected as rejected:
        err.print(f"[bold red]internal error:[/] {escape(str(rejected))}")
        raise typer.Exit(ExitCode.CHECK_FAILED) from None
    except NoSolution as stopped:
        err.print(f"[bold red]no plan:[/] {escape(f'{file}: {stopped}')}")
        raise typer.Exit(ExitCode.TIME_LIMIT) from None


def _check_flags(time_limit: float | None, mip_gap: float | None, threads: int | None) -> None:
    """The solver flags obey the bounds of the instance's `solver:` section (finite, a
    time limit of at most a day, threads within the CPU count)."""
    flags = {"time_limit_s": "--time-limit", "mip_gap": "--mip-gap", "threads": "--threads"}
    given = dict(zip(flags, (time_limit, mip_gap, threads), strict=True))
    try:
        SolverSettings.model_validate(
            {key: value for key, value in given.items() if value is not None}
        )
    except ValidationError as error:
        raise InputError(
            [
                Issue(
                    flags[str(item["loc"][0])], None, "", item["msg"].removeprefix("Value error, ")
                )
                for item in error.errors()
            ]
        ) from None


def _read_plan(path: Path) -> Plan:
    data, _ = read_document(path, what="plan")
    try:
        return Plan.model_validate(data)
    except ValidationError as error:
        raise InputError(
            [
                Issue(
                    str(path),
                    None,
                    ".".join(str(part) for part in item["loc"]),
                    item["msg"],
                )
                for item in error.errors()
            ]
        ) from None


def _write(path: Path | None, text: str) -> None:
    if path is not None:
        write_new_file(path, text)
        err.print(f"wrote {path}")


# --- rendering ------------------------------------------------------------------------


def plan_header(plan: Plan) -> list[str]:
    """The lines above the plan's tables."""
    lines = [
        f"{plan.instance}: {plan.status}, ${plan.cost_per_month or 0:,.0f}/month, "
        f"{plan.total_gpus} GPUs"
    ]
    if plan.solver is not None:
        s = plan.solver
        gap = "" if s.mip_gap is None else f", gap {s.mip_gap:.3%}"
        lines.append(
            f"solver: {s.name} {s.version}, {s.runtime_s:.2f} s{gap}; program: "
            f"{s.variables} variables ({s.integer_variables} integer), {s.constraints} "
            f"constraints, {s.candidates} candidate configurations"
        )
    lines += procurement_lines(plan)
    return lines


def procurement_lines(plan: Plan) -> list[str]:
    """Demand growth, headroom and what the limit on configurations per pool costs."""
    lines = []
    if plan.demand_growth != 1.0 or plan.max_utilization != 1.0:
        lines.append(
            f"planned for {plan.demand_growth:g}x today's demand, pools at most "
            f"{plan.max_utilization:.0%} of their capacity at the SLO"
        )
    simple = plan.simplicity
    if simple is not None and simple.extra_cost_per_month is not None:
        lines.append(
            f"simplicity: at most {simple.max_configs_per_pool} configuration(s) per pool "
            f"costs ${simple.extra_cost_per_month:,.0f}/month over the unlimited plan "
            f"(${simple.cost_per_month_unlimited:,.0f}/month, "
            f"{simple.configurations_unlimited} pools)"
        )
    return lines


def site_tables(plan: Plan) -> list[TableSpec]:
    """Servers to buy, and power per region (with its shadow price where limited)."""
    tables = []
    if plan.servers:
        tables.append(
            TableSpec(
                "Servers to buy",
                ("region", "GPU", "servers", "GPUs per server"),
                tuple(
                    (s.region, s.gpu, str(s.count), str(s.gpus_per_server or "-"))
                    for s in plan.servers
                ),
            )
        )
    if plan.power_kw:
        tables.append(
            TableSpec(
                "Power by region (every GPU installed, existing and bought)",
                ("region", "kW", "power_kw", "$/month per kW", "racks", "of"),
                tuple(
                    (
                        p.region,
                        f"{p.kw:,.1f}",
                        "-" if p.limit_kw is None else f"{p.limit_kw:,.0f}",
                        "-" if p.shadow_price_per_kw is None else f"{p.shadow_price_per_kw:,.2f}",
                        "-" if p.racks is None else f"{p.racks:,.2f}",
                        "-" if p.limit_racks is None else str(p.limit_racks),
                    )
                    for p in plan.power_kw
                ),
                "a nonzero $/kW: power, not money, binds the region",
            )
        )
    return tables


def plan_tables(plan: Plan) -> list[TableSpec]:
    """The plan as tables: pools per region, GPUs, binding constraints, utilisation."""
    tables = []
    for region in dict.fromkeys(pool.region for pool in plan.replicas):
        tables.append(
            TableSpec(
                f"{region}",
                (
                    "workload",
                    "GPU",
                    "precision",
                    "TP x PP",
                    "role",
                    "replicas",
                    "GPUs",
                    "req/s per replica",
                    "limit",
                ),
                tuple(
                    (
                        p.workload,
                        p.gpu,
                        str(p.precision),
                        f"{p.tp} x {p.pp}"
                        + (f" x dp{p.dp}" if p.dp > 1 else "")
                        + (f" ep{p.ep}" if p.ep > 1 else ""),
                        str(p.role),
                        str(p.count),
                        str(p.gpus),
                        _num(p.requests_per_s_per_replica),
                        str(p.limit or "-"),
                    )
                    for p in plan.replicas
                    if p.region == region
                ),
            )
        )
    tables.append(
        TableSpec(
            "GPUs by region and type",
            ("region", "GPU", "used", "existing", "bought", "available", "$/GPU-h", "$/month"),
            tuple(
                (
                    u.region,
                    u.gpu,
                    str(u.used),
                    str(u.existing),
                    str(u.purchased),
                    str(u.available),
                    f"{u.price_per_gpu_hour:.2f}",
                    f"{u.cost_per_month:,.0f}",
                )
                for u in plan.gpus
            ),
            f"total ${plan.cost_per_month or 0:,.0f}/month",
        )
    )
    tables += site_tables(plan)
    shown = plan.binding[:BINDING_ROWS_SHOWN]
    hidden = len(plan.binding) - len(shown)
    tables.append(
        TableSpec(
            "Binding constraints",
            ("constraint", "slack", "shadow price", "unit"),
            tuple((b.name, _num(b.slack), f"{b.shadow_price:,.2f}", b.unit) for b in shown),
            f"{hidden} more in --json" if hidden > 0 else "",
        )
    )
    tables.append(
        TableSpec(
            "Utilisation by scenario",
            ("scenario", "workload", "region", "phase", "load req/s", "capacity req/s", "util"),
            tuple(
                (
                    s.name,
                    p.workload,
                    p.region,
                    p.phase,
                    _num(p.load_requests_per_s),
                    _num(p.capacity_requests_per_s),
                    f"{p.utilisation:.0%}",
                )
                for s in plan.scenarios
                for p in s.pools
            ),
        )
    )
    return tables


def explanation_tables(explanation: Explanation) -> list[TableSpec]:
    """The explanation as tables."""
    plan_parts = plan_tables(explanation.plan)
    binding = next(t for t in plan_parts if t.title == "Binding constraints")
    utilisation = next(t for t in plan_parts if t.title == "Utilisation by scenario")
    return [
        binding,
        TableSpec(
            "Limiting factor of each chosen configuration",
            (
                "workload",
                "region",
                "configuration",
                "replicas",
                "req/s per replica",
                "limit",
                "why",
            ),
            tuple(
                (
                    n.workload,
                    n.region,
                    n.configuration,
                    str(n.count),
                    _num(n.requests_per_s_per_replica),
                    str(n.limit),
                    n.reason,
                )
                for n in explanation.limits
            ),
        ),
        TableSpec(
            "Without each chosen pool",
            (
                "workload",
                "region",
                "configuration",
                "cost without",
                "extra $/month",
                "used instead",
            ),
            tuple(
                (
                    a.workload,
                    a.region,
                    a.configuration,
                    "-" if a.cost_without_per_month is None else f"{a.cost_without_per_month:,.0f}",
                    "-" if a.extra_cost_per_month is None else f"{a.extra_cost_per_month:+,.0f}",
                    "; ".join(a.replaced_by),
                )
                for a in explanation.alternatives
            ),
            explanation.alternative_method,
        ),
        utilisation,
        TableSpec(
            "Slack by constraint family",
            ("family", "rows", "tight", "min slack", "dual unit", "requires"),
            tuple(
                (
                    f.family,
                    str(f.rows),
                    str(f.tight_rows),
                    _num(f.min_slack),
                    f.unit,
                    f.description,
                )
                for f in explanation.families
            ),
        ),
    ]


def _report(
    header: list[str],
    tables: list[TableSpec],
    result: Plan | Explanation,
    json_out: Path | None,
    markdown_out: Path | None,
) -> None:
    """Print the result's tables, and write it as JSON and Markdown where asked."""
    print_tables(header, tables, result.shadow_price_note)
    _write(json_out, result.model_dump_json(indent=2))
    _write(markdown_out, markdown_tables(header, tables, result.shadow_price_note))


def _print_diagnosis(file: Path, diagnosis: Diagnosis) -> None:
    err.print(f"[bold red]infeasible:[/] {escape(f'{file}: {diagnosis.summary}')}")
    err.print(f"  found by {diagnosis.method}", markup=False)
    for problem in diagnosis.problems:
        err.print(f"  - {problem.requirement}: {problem.message}", markup=False)
        if problem.remedy:
            err.print(f"    remedy: {problem.remedy}", markup=False)


def _print_verification(plan_file: Path, result: Verification) -> None:
    summary = (
        f"{result.total_gpus} GPUs, ${result.cost_per_month:,.0f}/month recomputed, "
        f"{len(result.checks)} scenario checks"
    )
    if result.ok:
        out.print(f"{plan_file}: ok: {summary}", markup=False)
        return
    count = len(result.violations)
    plural = "s" if count != 1 else ""
    err.print(
        f"[bold red]verify failed:[/] {escape(f'{plan_file}: {count} violation{plural}')}"
        f" ({escape(summary)})"
    )
    for violation in result.violations:
        err.print(f"  - {violation}", markup=False)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2g}"
