"""Command `simulate`: replay a plan's pools in the discrete-event simulator.

Parsing and rendering only: the numbers come from `solver.simulate.replay`.
"""

import time
from pathlib import Path
from typing import Annotated

import typer

from cli.exit_codes import ExitCode
from cli.options import (
    JsonOut,
    MarkdownOut,
    SetOption,
    given_on_command_line,
    load,
    require_verified,
    within,
)
from cli.render.console import err, out
from cli.render.tables import TableSpec, markdown_tables, print_tables
from cli.render.zeros import json_without_negative_zero
from models.io.documents import read_document
from models.io.output_files import check_targets, is_stdout, write_text
from models.io.output_kinds import JSON, MARKDOWN
from models.schema import flag_limits, limits
from models.schema.errors import InputError, Issue
from models.serving.latency import REQUESTS_PER_USER
from solver.plan.schema import Plan, no_plan_reason
from solver.simulate.closed_rows import CLOSED_LOOP
from solver.simulate.engine import DISPATCHES
from solver.simulate.hours import HourRefused, replayed_hour
from solver.simulate.replay import (
    EFFECTS,
    ClosedLoopRefused,
    PlanSimulation,
    simulate_plan,
)
from solver.simulate.replay_size import ReplayTooLarge
from solver.simulate.results import PoolSimulation
from solver.simulate.tolerance import MAX_CV, MIN_CV


def _problem(flag: str, message: str) -> InputError:
    return InputError([Issue("command line", None, flag, message)])


def _check_arrivals(arrivals: str, concurrency: int | None, effects: bool) -> None:
    """--arrivals open, or a closed loop with --concurrency (and no --effects)."""
    if arrivals not in ("open", *CLOSED_LOOP):
        raise _problem("--arrivals", f"must be open, burst or staggered, got {arrivals!r}")
    if arrivals == "open":
        if concurrency is not None:
            raise _problem("--concurrency", "needs --arrivals burst or staggered (a closed loop)")
        return
    if concurrency is None:
        raise _problem("--concurrency", f"--arrivals {arrivals} needs the users per replica")
    if effects:
        raise _problem("--effects", "switches engine effects off under open arrivals only")


def _check_closed_loop_size(
    plan: Plan, users: int | None, hour: int | None = None, month: int | None = None
) -> None:
    """A closed loop sends `users` x replicas x REQUESTS_PER_USER requests (every replica
    of the hour replayed counted, `replayed_hour`: --month 3's, not month 0's peak fleet;
    an upper bound for a pair, whose users sit on its decode side); more than
    `flag_limits.CLOSED_LOOP_REQUESTS` is refused before any replay."""
    if users is None:
        return
    replicas = sum(pool.count for pool in replayed_hour(plan, hour, month).plan.replicas)
    requests = users * replicas * REQUESTS_PER_USER
    most = flag_limits.CLOSED_LOOP_REQUESTS
    if requests > most.count:
        raise _problem(
            "--concurrency",
            f"{users:,} users on each of the {replicas:,} replicas replayed send {requests:,} "
            f"requests ({REQUESTS_PER_USER} each); at most {most.count:,} {most.what} "
            f"({most.why})",
        )


def _read_plan(path: Path) -> Plan:
    from cli.solve import plan_of

    data, lines = read_document(path, what="plan")  # bounded: a FIFO or device is refused
    if (reason := no_plan_reason(data)) is not None:
        raise _problem("PLAN", f"{path} {reason}")
    plan = plan_of(data, path, lines)  # each field named, as verify names it
    if not plan.scenarios and not any(hour.scenarios for hour in plan.hours):
        raise _problem(  # it read "--scenario: scenario 'none' is not in the plan; it has none"
            "PLAN",
            f"{path} states no scenario table (the load each pool carries): a fleet of "
            'replicas only ({"replicas": [...]}, as fleet-import writes) is judged by '
            "`fleetplan verify`; simulate replays a plan written by `fleetplan solve --json`",
        )
    return plan


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _fmt_ms(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if metric == "TPOT" else f"{value:,.0f}"


def _cv(value: float | None, searched: bool) -> str:
    if value is None:
        return "< " + f"{MIN_CV:g}" if searched else "-"
    return f">= {value:g}" if value >= MAX_CV else f"{value:.2f}"


def _configuration(pool: PoolSimulation) -> str:
    """The pool's configuration as the plan labels it (`h200 fp8 tp1xpp1xdp8 ep8
    unified`: attention DP, expert parallelism, speculation and the role told apart);
    a replay written before the label: its GPU, precision, TP x PP and role."""
    return pool.configuration or f"{pool.gpu} {pool.precision} tp{pool.tp}xpp{pool.pp} {pool.role}"


def simulation_tables(result: PlanSimulation) -> list[TableSpec]:
    """The replay as tables: each pool's simulated p50/p99 TTFT and TPOT beside the
    analytic promise and the target (ms), and, with --effects, p99 TTFT with each engine
    effect switched off."""
    rows = []
    searched = any(pool.tolerated_burstiness_cv is not None for pool in result.pools)
    for pool in result.pools:
        sim, ana = pool.simulated, pool.analytic
        verdict = "-" if pool.meets_slo is None else ("ok" if pool.meets_slo else "MISSES")
        rows.append(
            (
                f"{pool.workload} {pool.region} {_configuration(pool)}",
                str(pool.replicas),
                f"{pool.load_requests_per_s:,.2f}",
                _fmt(sim.ttft_p50_ms if sim else None),
                _fmt(sim.ttft_p99_ms if sim else None),
                _fmt(ana.ttft_p99_ms if ana else None),
                _fmt(pool.ttft_p99_target_ms),
                f"{sim.tpot_p50_ms:,.1f}" if sim and sim.tpot_p50_ms else "-",
                f"{sim.tpot_p99_ms:,.1f}" if sim and sim.tpot_p99_ms else "-",
                f"{ana.tpot_p99_ms:,.1f}" if ana and ana.tpot_p99_ms else "-",
                _fmt(pool.tpot_p99_target_ms),
                verdict,
                _cv(pool.tolerated_burstiness_cv, searched and pool.meets_slo is not None),
            )
        )
    how = (
        f"{result.duration_s:g} s of arrivals, burstiness cv {result.burstiness_cv:g}"
        if result.arrivals == "open"
        else f"closed loop, {result.arrivals}, {result.concurrency} users per replica "
        "(a pair: per decode replica)"
    )
    closed_notes = "; ".join(
        dict.fromkeys(  # a pair's two rows share one note
            f"{pool.workload} {pool.region} {pool.gpu}: {pool.note}"
            for pool in result.pools
            if result.arrivals != "open" and pool.note
        )
    )
    tables = [
        TableSpec(
            title=f"{result.instance}, scenario {result.scenario}"
            + (f", {result.replayed}" if result.replayed else "")
            + f": simulated vs analytic (ms; {how}, {result.dispatch})",
            columns=(
                "pool",
                "replicas",
                "req/s",
                "TTFT p50",
                "TTFT p99",
                "analytic",
                "target",
                "TPOT p50",
                "TPOT p99",
                "analytic",
                "target",
                "SLO",
                "tolerates cv",
            ),
            rows=tuple(rows),
            note=(
                "tolerates cv: the largest coefficient of variation of inter-arrival times "
                "(1 = Poisson) at the same mean rate and seed at which the pool still meets "
                f"its SLO (bisection, {MIN_CV:g} to {MAX_CV:g}; a disaggregated pair is "
                "judged together)"
                if searched
                else closed_notes
            ),
        )
    ]
    soaked = [(pool, b) for pool in result.pools for b in pool.batch]
    if soaked:
        tables.append(
            TableSpec(
                title="batch soaked beside the interactive pools (the TTFT/TPOT above are "
                "the interactive requests' with the batch beside them)",
                columns=(
                    "pool",
                    "batch",
                    "planned req/s",
                    "injected",
                    "finished req/s",
                    "throughput",
                ),
                rows=tuple(
                    (
                        f"{pool.workload} {pool.region} {_configuration(pool)}",
                        b.batch,
                        f"{b.planned_requests_per_s:,.2f}",
                        f"{b.injected:,}",
                        f"{b.achieved_requests_per_s:,.2f}"
                        if b.measured_from_s < result.duration_s
                        else "-",
                        "SHORTFALL"
                        if b.shortfall
                        else "ok"
                        if b.measured_from_s < result.duration_s
                        else "run too short",
                    )
                    for pool, b in soaked
                ),
                note="finished req/s: batch requests finished between the later of the "
                "warm-up and the pool's fill with batch and the end of the arrivals, per "
                "second (-: the run ends before the pool fills); SHORTFALL: below the "
                "planned rate by more than 3 Poisson standard deviations (batch and "
                "interactive requests share each replica's queue in arrival order, no "
                "priority)",
            )
        )
    if any(pool.effects_ttft_p99_ms or pool.effects_tpot_p99_ms for pool in result.pools):
        rows = []
        for pool in result.pools:
            metric, p99s = ("TTFT", pool.effects_ttft_p99_ms)
            if not p99s and pool.effects_tpot_p99_ms:
                metric, p99s = ("TPOT", pool.effects_tpot_p99_ms)
            if not p99s:
                continue
            rows.append(
                (
                    f"{pool.region} {_configuration(pool)}",
                    metric,
                    _fmt_ms(p99s.get("none_off"), metric),
                    *(_fmt_ms(p99s.get(f"{name}_off"), metric) for name in EFFECTS),
                )
            )
        tables.append(
            TableSpec(
                title="p99 latency (ms) with each engine effect switched off",
                columns=(
                    "pool",
                    "p99",
                    "all on",
                    *(f"no {name.replace('_', ' ')}" for name in EFFECTS),
                ),
                rows=tuple(rows),
                note="TTFT for unified and prefill pools, TPOT for the decode pool of a "
                "disaggregated pair",
            )
        )
    return tables


def simulate(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Instance file the plan was solved from.")],
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN.json", help="Plan written by `fleetplan solve --json`.")
    ],
    scenario: Annotated[str, typer.Option(help="Failure scenario of the plan to replay.")] = "none",
    minutes: Annotated[
        float,
        typer.Option(
            help="Simulated minutes of arrivals.", callback=within(flag_limits.SIMULATED_MINUTES)
        ),
    ] = 10.0,
    duration_s: Annotated[
        float | None,
        typer.Option(
            "--duration-s",
            help="Simulated seconds (instead of --minutes).",
            callback=within(flag_limits.SIMULATED_S),
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Random seed (same seed, same output).", callback=within(flag_limits.SEED)
        ),
    ] = 0,
    burstiness: Annotated[
        float,
        typer.Option(
            help="Coefficient of variation of inter-arrival times (1: Poisson).",
            callback=within(flag_limits.ARRIVAL_CV),
        ),
    ] = 1.0,
    dispatch: Annotated[
        str,
        typer.Option(
            help="Router policy: least_prefill (least prompt work queued, the router the "
            "planner assumes), jsq (fewest outstanding requests) or round_robin."
        ),
    ] = "least_prefill",
    effects: Annotated[
        bool, typer.Option("--effects", help="Also report p99 TTFT with each engine effect off.")
    ] = False,
    tolerance: Annotated[
        bool,
        typer.Option(
            help="Also find the burstiness (inter-arrival cv) each pool tolerates before "
            "missing its SLO (bisection at the same seed; ~9 more runs of each pool)."
        ),
    ] = True,
    arrivals: Annotated[
        str,
        typer.Option(
            "--arrivals",
            help="How requests arrive. open (default): Poisson at the plan's load (gamma "
            "with --burstiness), the traffic a service sees and the plan is sized for. "
            "burst: the benchmark tools' closed loop (vllm bench serve --max-concurrency, "
            "genai-perf/aiperf, trtllm-bench): --concurrency users per replica start "
            "together with fixed lengths, each sending its next request when the last "
            "completes, as perf --concurrency --arrivals burst predicts. staggered: the "
            "same users with drawn lengths and their first requests spread over one "
            "cycle (perf --arrivals steady). Closed loops send 10 requests per user and "
            "measure every one; the p99s are judged as the tools print them.",
        ),
    ] = "open",
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Closed-loop users per replica (per decode replica of a disaggregated "
            "pair), with --arrivals burst or staggered.",
            callback=within(flag_limits.CONCURRENT_USERS),
        ),
    ] = None,
    hour: Annotated[
        int | None,
        typer.Option(
            "--hour",
            help="UTC hour (0-23) of an hourly plan to replay: the pools that hour runs at "
            "that hour's load (with --scenario, its failover loads). Default: the peak hour.",
            callback=within(limits.UTC_HOUR),
        ),
    ] = None,
    month: Annotated[
        int | None,
        typer.Option(
            "--month",
            help="Month of a plan with months (policy.horizon_months) to replay: its peak "
            "hour, or with --hour that hour of it. Default: month 0.",
            callback=within(limits.MONTH),
        ),
    ] = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
    sets: SetOption = None,
) -> None:
    """Replay each pool of a plan with continuous batching, chunked prefill, a KV limit
    with preemption and the router's queue; compare p50/p99 TTFT and TPOT with the
    analytic promise and the SLO. An hourly plan replays one UTC hour (--hour, --month;
    default its peak hour, named in the title). Exit 1 when a pool misses its SLO in
    simulation."""
    _check_arrivals(arrivals, concurrency, effects)
    if duration_s is not None and given_on_command_line(ctx, "minutes"):  # 2 min dropped
        raise _problem("--minutes", "is replaced by --duration-s: give the run's length once")
    if arrivals in CLOSED_LOOP:  # each replays users x requests, at no rate and for no time
        for name in ("minutes", "duration_s", "burstiness"):
            if given_on_command_line(ctx, name):
                raise _problem(
                    "--" + name.replace("_", "-"),
                    f"shapes open arrivals only; --arrivals {arrivals} replays --concurrency "
                    "users sending their requests one after another: drop it",
                )
        if arrivals == "burst" and given_on_command_line(ctx, "seed"):  # nothing is drawn
            raise _problem("--seed", "the burst replays fixed lengths and draws nothing: drop it")
    outputs = [path for path in (json_out, markdown_out) if path is not None]
    if sum(is_stdout(path) for path in outputs) > 1:
        raise _problem("--json/--markdown", "only one of them can be - (standard output)")
    check_targets(((json_out, JSON), (markdown_out, MARKDOWN)), (file, plan_file))
    instance = load(file, sets, tuple(outputs))
    plan = _read_plan(plan_file)
    try:
        replayed_hour(plan, hour, month)  # refused before the verifier's work
    except HourRefused as error:
        raise _problem(error.option, str(error)) from None
    require_verified(instance, plan, plan_file, "simulate")  # replays only what holds
    _check_closed_loop_size(plan, concurrency, hour, month)
    seconds = duration_s if duration_s is not None else minutes * 60
    if dispatch not in DISPATCHES:
        raise _problem("--dispatch", f"must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    started = time.perf_counter()
    try:
        result = simulate_plan(
            instance,
            plan,
            scenario,
            seconds,
            seed,
            burstiness,
            dispatch,
            effects=effects,
            tolerance=tolerance and arrivals == "open",
            arrivals=arrivals,
            concurrency=concurrency,
            hour=hour,
            month=month,
        )
    except HourRefused as error:
        raise _problem(error.option, str(error)) from None
    except ClosedLoopRefused as error:
        raise _problem("--arrivals", str(error)) from None
    except ReplayTooLarge as error:
        raise _problem("--minutes/--duration-s", str(error)) from None
    except ValueError as error:
        raise _problem("--scenario", str(error)) from None
    wall_s = time.perf_counter() - started
    too_short = result.unmeasured()
    if too_short is not None:
        raise _problem("--minutes/--duration-s", too_short)
    tables = simulation_tables(result)
    if json_out is not None:
        text = json_without_negative_zero(result.model_dump_json(indent=2))
        write_text(json_out, text, (file, plan_file), kind=JSON)
    if markdown_out is not None:
        write_text(markdown_out, markdown_tables([], tables), (file, plan_file), kind=MARKDOWN)
    print_tables([], tables, console=err if any(is_stdout(p) for p in outputs) else out)
    for left_out in result.not_simulated:
        err.print(f"not replayed: {left_out}", markup=False, highlight=False)
    for check in result.batch_deadlines:
        err.print(f"batch deadline: {check.words}", markup=False, highlight=False)
    for short in result.batch_shortfalls:
        err.print(f"batch shortfall: {short}", markup=False, highlight=False)
    err.print(f"{result.events:,} events in {wall_s:.1f} s")
    if not result.meets_slo:
        raise typer.Exit(ExitCode.CHECK_FAILED)
