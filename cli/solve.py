"""Commands `solve`, `verify` and `explain`: parse, call one solver function, render.

Why one module over 500 lines: the three commands share their options, output checks
and the plan's tables; the time and attribution tables live in their own modules
(cli/render/time_tables.py, cli/attribution.py).

Exit codes: 0 solved (or verified), 1 verify found violations, 2 bad input (an output
path that cannot be written included, checked before solving), 3 infeasible (with the
diagnosis), 4 no plan within the time limit (naming the stage it stopped in).

`--time-limit` bounds the whole command from its start: candidates, program, solve,
pricing, verification and (for explain) the re-solves share one deadline.
"""

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from cli.exit_codes import ExitCode
from cli.options import JsonOut, MarkdownOut, SetOption, emit_json, load, to_stdout
from cli.render.console import err, out
from cli.render.tables import TableSpec, markdown_tables, print_tables
from cli.render.time_tables import time_tables
from models.io.loading import read_document
from models.io.output_files import check_target, is_stdout, write_text
from models.schema.backend_names import BACKEND_NAMES
from models.schema.errors import InputError, Issue
from models.schema.policy import SolverSettings
from solver.backends import UnknownBackendError
from solver.errors import BackendUnavailable, Diagnosis, Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan, ReplicaPool
from solver.settings import SolveSettings
from solver.solve import Solved, solve_program
from solver.verify.fleet import Verification

if TYPE_CHECKING:  # `solve` never needs the explanation's modules (levers, re-solves)
    from solver.analysis.explain import Explanation

BINDING_ROWS_SHOWN = 20
"""Binding constraints printed in the terminal (all of them go to --json)."""
UTILISATION_ROWS_SHOWN = 40
"""Rows of the utilisation table printed in the terminal: the most utilised, in scenario
order (all of them go to --json). A 10-region, 20-workload plan surviving any region
loss has ~1,600 (scenario, pool) rows, unreadable as text and a second of rendering."""

InstanceFile = Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")]
BackendOption = Annotated[
    str | None,
    typer.Option(help=f"Solver backend: {', '.join(BACKEND_NAMES)} (default: the instance's)."),
]
TimeLimit = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        min=0.001,
        help="Time limit of the whole run (candidates, solve, pricing, checks), seconds.",
    ),
]
MipGap = Annotated[
    float | None,
    typer.Option("--mip-gap", min=0.0, max=0.999, help="Relative MIP gap to stop at."),
]
Threads = Annotated[
    int | None, typer.Option(min=1, help="Solver threads (default: the instance's, usually 1).")
]


def solve(
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
    export_mps: Annotated[
        Path | None,
        typer.Option(
            "--export-mps",
            help="Write the program (named rows and columns) to this .mps or .lp file first.",
        ),
    ] = None,
    sets: SetOption = None,
) -> None:
    """Find the cheapest fleet that meets the instance's SLOs and failure policy.

    Infeasible: the diagnosis on stderr, and as JSON (`{"status": "infeasible",
    "diagnosis": ...}`) where --json asks; exit code 3 either way.
    """
    started = time.monotonic()
    check_outputs(file, json_out, markdown_out, export_mps)
    if export_mps is not None:
        from cli.export import export_program

        export_program(file, export_mps)
    solved = _solve(file, started, backend, time_limit, mip_gap, threads, sets, json_out)
    plan = solved.plan
    tables = plan_tables(plan) + time_tables(plan) + _voice_tables(solved)
    _report(plan_header(plan), tables, plan, json_out, markdown_out, file)


def _voice_tables(solved: Solved) -> list[TableSpec]:
    """The voice budget of each voice workload (none for other instances)."""
    instance = solved.program.sets.instance
    if not any(workload.voice for workload in instance.workloads):
        return []
    from cli.voice import voice_tables

    return voice_tables(instance)


def explain(
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
    levers: Annotated[
        bool, typer.Option("--levers", help="Also re-solve with each lever; rank by $ saved.")
    ] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Lever re-solves at once.")] = 2,
    sets: SetOption = None,
) -> None:
    """Solve, then explain the plan: what binds, at what price, and what else would cost."""
    started = time.monotonic()
    check_outputs(file, json_out, markdown_out)
    solved = _solve(file, started, backend, time_limit, mip_gap, threads, sets, json_out)
    if solved.plan.hours:  # an hourly plan: its hours, headroom, budget and months
        plan = solved.plan
        tables = plan_tables(plan) + time_tables(plan)
        _report(plan_header(plan), tables, plan, json_out, markdown_out, file)
        return
    from solver.analysis.explain import explain_solved

    try:
        explanation = explain_solved(solved, progress=_progress_after(started))
    except NoSolution as stopped:
        err.print(f"[bold red]no explanation:[/] {escape(f'{file}: {stopped}')}")
        raise typer.Exit(ExitCode.TIME_LIMIT) from None
    header = [
        f"{explanation.instance}: explanation of the {explanation.status} plan at "
        f"${explanation.cost_per_month:,.0f}/month"
    ]
    if not explanation.plan.optimal:
        header.append(
            "not proven optimal: the plan's cost is an upper bound, so what each pool "
            "saves against its alternative is not shown"
        )
    header += procurement_lines(explanation.plan)
    tables = explanation_tables(explanation) + _voice_tables(solved)
    if levers:
        from cli.levers import with_levers

        explanation, tables = with_levers(solved, explanation, tables, backend, jobs)
    _report(header, tables, explanation, json_out, markdown_out, file)


def verify(
    file: InstanceFile,
    plan_file: Annotated[
        Path, typer.Argument(help='Plan JSON (from `solve --json`, or {"replicas": [...]}).')
    ],
    json_out: JsonOut = None,
    sets: SetOption = None,
) -> None:
    """Check a plan, or a fleet you own, against the instance with the physics alone.

    Judges the requirements (capacity against load in every scenario, latency within the
    SLO, memory, supply, cost); a figure the plan states that differs from the
    recomputed one without breaking a requirement is a warning. Exit 0 when every
    requirement holds, 1 otherwise.
    """
    if json_out is not None:
        check_target(json_out, (file, plan_file))
    instance = load(file, sets)
    from solver.verify.hours import verify_any as verify_plan  # `verify`'s alone (issue 19)

    result = verify_plan(instance, _read_plan(plan_file))
    emit_json(json_out, result, (file, plan_file))
    if json_out is None or not is_stdout(json_out):
        _print_verification(plan_file, result)
    if not result.ok:
        raise typer.Exit(ExitCode.CHECK_FAILED)


# --- the one library call, and its failures -------------------------------------------


PROGRESS_AFTER_S = 2.0
"""A command that has run this long tells its progress on stderr."""


def _progress_after(started: float, after_s: float = PROGRESS_AFTER_S):
    """A progress callback that writes each line on stderr once the command has run
    `after_s` seconds (a quick run stays quiet)."""

    def tell(line: str) -> None:
        if time.monotonic() - started >= after_s:
            err.print(escape(line), highlight=False)

    return tell


def check_outputs(file: Path, *outputs: Path | None) -> None:
    """Refuse, before any work, an output path that cannot or must not be written
    (models.io.output_files.check_target): exit code 2 naming the path."""
    for path in outputs:
        if path is not None:
            check_target(path, (file,))


def _solve(
    file: Path,
    started: float,
    backend: str | None,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    sets: list[str] | None = None,
    json_out: Path | None = None,
) -> Solved:
    instance = load(file, sets)
    _check_flags(time_limit, mip_gap, threads)
    try:
        settings = SolveSettings.of(instance, backend, time_limit, mip_gap, threads)
    except ValueError as error:
        raise InputError([Issue("solver", None, "", str(error))]) from None
    settings = settings.started(at=started)
    try:
        return solve_program(instance, settings)
    except Infeasible as infeasible:
        _print_diagnosis(file, infeasible.diagnosis)
        emit_json(json_out, diagnosis_json(instance.name, infeasible.diagnosis), (file,))
        raise typer.Exit(ExitCode.INFEASIBLE) from None
    except (UnknownBackendError, BackendUnavailable) as error:
        raise InputError([Issue("--backend", None, "", str(error))]) from None
    except PlanRejected as rejected:
        err.print(f"[bold red]internal error:[/] {escape(str(rejected))}")
        raise typer.Exit(ExitCode.CHECK_FAILED) from None
    except NoSolution as stopped:
        err.print(f"[bold red]no plan:[/] {escape(f'{file}: {stopped}')}")
        raise typer.Exit(ExitCode.TIME_LIMIT) from None


def diagnosis_json(instance: str, diagnosis: Diagnosis) -> dict:
    """An infeasible instance's diagnosis as data: the requirements in conflict, each
    with its numbers and remedy."""
    return {
        "instance": instance,
        "status": "infeasible",
        "diagnosis": {
            "summary": diagnosis.summary,
            "method": diagnosis.method,
            "problems": [
                {"requirement": p.requirement, "message": p.message, "remedy": p.remedy}
                for p in diagnosis.problems
            ],
        },
    }


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


def _write(path: Path | None, text: str, file: Path) -> None:
    if path is not None:
        write_text(path, text, (file,))
        if not is_stdout(path):
            err.print(f"wrote {path}", markup=False)


# --- rendering ------------------------------------------------------------------------


def plan_header(plan: Plan) -> list[str]:
    """The lines above the plan's tables (the status says "optimal" only when it is)."""
    lines = [
        f"{plan.instance}: {plan.status}, ${plan.cost_per_month or 0:,.0f}/month, "
        f"{plan.total_gpus} GPU{'' if plan.total_gpus == 1 else 's'}"
    ]
    if plan.idle_fraction is not None:
        lines.append(f"idle at peak: {plan.idle_fraction:.1%} of the GPU-hours paid")
    if plan.solver is not None:
        s = plan.solver
        gap = "" if s.mip_gap is None else f", gap {s.mip_gap:.3%}"
        lines.append(
            f"solver: {s.name} {s.version}, {s.runtime_s:.2f} s of solving{gap}; program: "
            f"{s.variables} variables ({s.integer_variables} integer), {s.constraints} "
            f"constraints, {s.candidates} candidate configurations"
        )
    if plan.efficiency_note:
        lines.append(plan.efficiency_note)
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
        capped = any(p.limit_kw is not None or p.limit_racks is not None for p in plan.power_kw)
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
                "a nonzero $/kW: power, not money, binds the region" if capped else "",
            )
        )
    return tables


def _prefix_cache(pool: ReplicaPool) -> tuple[str, str]:
    """The KV tiers a pool uses and its effective hit rate, as table cells."""
    if pool.prefix_hit_rate is None:
        return ("-", "-")
    return ("+".join(pool.kv_tiers_used or ()) or "-", f"{pool.prefix_hit_rate:.1%}")


def plan_tables(plan: Plan) -> list[TableSpec]:
    """The plan as tables: pools per region, GPUs, binding constraints, utilisation.

    A region with a prefix cache in some pool adds the KV tiers each pool uses and its
    effective hit rate at its size (`ReplicaPool.kv_tiers_used`, `prefix_hit_rate`)."""
    tables = []
    for region in dict.fromkeys(pool.region for pool in plan.replicas):
        pools = [p for p in plan.replicas if p.region == region]
        cached = any(p.prefix_hit_rate is not None for p in pools)
        columns = (
            "workload",
            "GPU",
            "precision",
            "TP x PP",
            "role",
            "replicas",
            "GPUs",
            "req/s per replica",
            "limit",
        )
        tables.append(
            TableSpec(
                f"{region}",
                columns + (("KV tiers", "hit rate") if cached else ()),
                tuple(
                    (
                        _served(p),
                        p.gpu,
                        str(p.precision),
                        f"{p.tp} x {p.pp}"
                        + (f" x dp{p.dp}" if p.dp > 1 else "")
                        + (f" ep{p.ep}" if p.ep > 1 else ""),
                        str(p.role) + (f", spec {p.speculative}" if p.speculative else ""),
                        str(p.count),
                        str(p.gpus),
                        _per_replica(p),
                        str(p.limit or "-"),
                    )
                    + (_prefix_cache(p) if cached else ())
                    for p in pools
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
    if plan.cost_attribution:
        from cli.attribution import attribution_table

        tables.append(attribution_table(plan))
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
    tables.append(_utilisation_table(plan))
    return tables + tiering_tables(plan)


def _utilisation_table(plan: Plan) -> TableSpec:
    """Load against capacity of every pool in every scenario; beyond
    `UTILISATION_ROWS_SHOWN` rows, the most utilised ones (the rest are said in a note)."""
    rows = [(s.name, p) for s in plan.scenarios for p in s.pools]
    note = ""
    if len(rows) > UTILISATION_ROWS_SHOWN:
        ranked = sorted(range(len(rows)), key=lambda i: -rows[i][1].utilisation)
        kept = sorted(ranked[:UTILISATION_ROWS_SHOWN])
        lowest = rows[ranked[UTILISATION_ROWS_SHOWN - 1]][1].utilisation
        note = (
            f"the {UTILISATION_ROWS_SHOWN} most utilised of {len(rows):,} rows; the other "
            f"{len(rows) - UTILISATION_ROWS_SHOWN:,} (at most {lowest:.0%}) in --json"
        )
        rows = [rows[i] for i in kept]
    return TableSpec(
        "Utilisation by scenario",
        ("scenario", "workload", "region", "phase", "load req/s", "capacity req/s", "util"),
        tuple(
            (
                name,
                p.workload,
                p.region,
                p.phase,
                _num(p.load_requests_per_s),
                _num(p.capacity_requests_per_s),
                f"{p.utilisation:.0%}",
            )
            for name, p in rows
        ),
        note,
    )


def _served(pool) -> str:
    """A dedicated pool's workload; a shared group's members, one row for the group."""
    if pool.shared:
        return "shared: " + ", ".join(pool.workloads)
    return pool.workload


def _per_replica(pool) -> str:
    """Capacity per replica; for a shared group, each member's share."""
    if pool.shared:
        return ", ".join(f"{m.workload} {m.requests_per_s_per_replica:.3g}" for m in pool.members)
    return _num(pool.requests_per_s_per_replica)


def tiering_tables(plan: Plan) -> list[TableSpec]:
    """The tiering report (policy.colocation) as a table, empty without one."""
    t = plan.tiering
    if t is None:
        return []
    before = "-" if t.idle_fraction_dedicated is None else f"{t.idle_fraction_dedicated:.1%}"
    saved = "-" if t.saving_per_month is None else f"${t.saving_per_month:,.0f}/month"
    note = (
        f"idle at peak: {before} with dedicated pools ({t.gpus_dedicated} GPUs, "
        f"${t.cost_per_month_dedicated or 0:,.0f}/month) -> {t.idle_fraction:.1%} with "
        f"co-location; sharing saved {saved}. Pays the bills: "
        f"{', '.join(t.pays_the_bills) or 'none'}; {t.note}. {t.templates} group templates "
        f"({t.enumeration_s:.1f} s)."
    )
    search = plan.colocation
    if search is not None and search.packing_cost is not None and search.lp_bound is not None:
        gap = "-" if search.gap is None else f"{search.gap:.1%}"
        note += (
            f" Groups by column generation: {search.groups_checked} checked in "
            f"{search.rounds} rounds; the tail's packing at peak costs "
            f"${search.packing_cost:,.0f}/month, at least ${search.lp_bound:,.0f} (LP bound, "
            f"gap {gap}; {search.note.rsplit('; ', 1)[-1]})."
        )
    if plan.capacity_unit:
        note += f" Capacity unit: {plan.capacity_unit}."
    return [
        TableSpec(
            "Tiering",
            ("workload", "tier", "peak req/s", "utilisation at peak", "shared groups"),
            tuple(
                (
                    w.workload,
                    w.tier,
                    _num(w.peak_requests_per_s),
                    f"{w.utilisation:.0%}",
                    "; ".join(w.groups) or "-",
                )
                for w in t.workloads
            ),
            note,
        )
    ]


def gpu_count_tables(explanation: "Explanation") -> list[TableSpec]:
    """What routing by GPU count would do, where a workload has several configurations
    in a region."""
    rows = explanation.gpu_count_routing
    if not rows:
        return []

    def ms(value: float | None) -> str:
        return "unbounded" if value is None else f"{value:,.0f}"

    return [
        TableSpec(
            "Routing by GPU count instead of by capacity",
            (
                "workload",
                "region",
                "pool",
                "weight (capacity)",
                "weight (GPUs)",
                "utilisation",
                "p99 TTFT ms",
                "target",
                "p99 TPOT ms",
                "target",
                "breaks SLO",
            ),
            tuple(
                (
                    r.workload,
                    r.region,
                    r.configuration,
                    f"{r.weight_by_capacity:.0%}",
                    f"{r.weight_by_gpus:.0%}",
                    f"{r.utilisation:.0%}",
                    ms(r.ttft_p99_ms),
                    ms(r.ttft_target_ms),
                    ms(r.tpot_p99_ms),
                    ms(r.tpot_target_ms),
                    "yes" if r.breaks_slo else "no",
                )
                for r in rows
            ),
            "the plan routes by capacity (routing_weight); by GPU count the slower pool "
            "gets more than it carries at its SLO",
        )
    ]


def explanation_tables(explanation: "Explanation") -> list[TableSpec]:
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
        *tiering_tables(explanation.plan),
        *gpu_count_tables(explanation),
        *engine_effect_tables(explanation),
    ]


def engine_effect_tables(explanation: "Explanation") -> list[TableSpec]:
    """Which engine effects bind each simulated pool's p99 (none when not simulated)."""
    if not explanation.engine_effects:
        return []
    names = ("batching", "preemption", "interference", "hol_blocking")

    def ms(value: float | None) -> str:
        return "unbounded" if value is None else f"{value:,.1f}"

    return [
        TableSpec(
            "Engine effects that bind (simulated p99, ms, with each effect off)",
            ("workload", "region", "pool", "p99", "all on", *names, "binding"),
            tuple(
                (
                    e.workload,
                    e.region,
                    e.pool,
                    e.metric.upper(),
                    ms(e.p99_ms),
                    *(ms(e.off_p99_ms.get(name)) for name in names),
                    ", ".join(e.binding) or "none",
                )
                for e in explanation.engine_effects
            ),
            explanation.engine_effects_method,
        )
    ]


def _report(
    header: list[str],
    tables: list[TableSpec],
    result: "Plan | Explanation",
    json_out: Path | None,
    markdown_out: Path | None,
    file: Path,
) -> None:
    """Print the result's tables (on stderr when an output is `-`, so standard output
    holds only that output), and write it as JSON and Markdown where asked."""
    console = err if to_stdout(json_out, markdown_out) else out
    print_tables(header, tables, result.shadow_price_note, console)
    _write(json_out, result.model_dump_json(indent=2), file)
    _write(markdown_out, markdown_tables(header, tables, result.shadow_price_note), file)


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
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(str(warning))}")
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
