"""Command `calibrate`: an engine profile fitted on one's own benchmark runs. Parsing and
rendering only: the reading is `models.profiles.measurements`, the fit `models.profiles.fit`.
"""

import datetime
import math
from pathlib import Path
from typing import Annotated

import typer
import yaml

from cli.options import JsonOnly, emit_json, read_files, to_stdout, within
from cli.render.console import err, out
from cli.render.tables import TableSpec, print_tables
from models.io.documents import not_utf8
from models.io.output_files import check_targets, write_text
from models.io.output_kinds import JSON, PROFILE, PROFILE_OPENING
from models.physics.efficiency import Efficiency, UnknownEngine, check_engine
from models.profiles.fit import (
    FIGURES,
    FITTED,
    MAX_LEAVE_ONE_OUT_RUNS,
    ProfileFit,
    base_efficiency,
    beyond_physics,
    fit_profile,
    leave_one_out_refusal,
    profile_document,
    replay_refusal,
)
from models.profiles.measurements import Measurement, RunDefaults, read_measurements
from models.schema import flag_limits, limits
from models.schema.errors import InputError, Issue
from models.schema.quantities import counted, long_name

_LABELS = {"output_tokens_per_s": "tok/s", "ttft_mean_ms": "TTFT ms", "tpot_mean_ms": "TPOT ms"}


def _cell(run: Measurement, predicted: dict[str, float], figure: str) -> str:
    measured = getattr(run, figure)
    if measured is None:
        return ""
    if figure not in predicted:
        return f"{measured:,.4g} (no fit)"
    error = (predicted[figure] - measured) / measured * 100
    return f"{measured:,.4g} -> {predicted[figure]:,.4g} ({error:+z.1f}%)"


def fit_table(fit: ProfileFit) -> TableSpec:
    """Per run: measured -> predicted (error) for each figure, in the fit and left out."""
    rows = []
    for run_fit in fit.runs:
        run = run_fit.run
        layout = f"{run.gpu} {run.precision.value} tp{run.tp}"
        layout += f" pp{run.pp}" if run.pp > 1 else ""
        cells = [_cell(run, run_fit.predicted, figure) for figure in FIGURES]
        loo = run_fit.errors_pct(run_fit.left_out)
        left_out = ", ".join(f"{_LABELS[f]} {e:+z.1f}%" for f, e in loo.items()) or "-"
        rows.append(
            (
                run.source,
                f"{run.model}, {layout}",
                f"{run.prompt_tokens:,.0f}/{run.output_tokens:,.0f}",
                str(run.concurrency),
                *cells,
                left_out,
            )
        )
    return TableSpec(
        title="Fit per run (measured -> predicted)",
        columns=("run", "replica", "isl/osl", "C", *(_LABELS[f] for f in FIGURES), "left out"),
        rows=tuple(rows),
        note="left out: the error when the profile is fitted without that run",
    )


POOR_FIT_PCT = 50.0
"""A fit whose median |error| on its own runs passes this is said to be poor: the
factors hit their bounds (a throughput entered 1,000x too small fitted to a 392% median
error and was written without a word)."""


def overhead_cell(fit: ProfileFit) -> str:
    """The request overhead and where it comes from: '87.9 ms (median over 2 one-user
    runs)', or the base profile's."""
    value = f"{fit.efficiency.request_overhead_s * 1e3:.1f} ms"
    if fit.overhead_runs:
        runs = "run" if fit.overhead_runs == 1 else "runs"
        return f"{value} (median over {fit.overhead_runs} one-user {runs})"
    return f"{value} (the base profile's: fitted with a one-user run and a second TTFT)"


def factors_table(fit: ProfileFit) -> TableSpec:
    """The fitted factors, and the request overhead in every TTFT."""
    rows = tuple((name, f"{getattr(fit.efficiency, name):.4g}") for name in FITTED)
    rows += (("request_overhead_s", overhead_cell(fit)),)
    loo = fit.median_abs_error_pct(left_out=True)
    note = f"median |error| {fit.median_abs_error_pct():.1f}% in the fit" + (
        f", {loo:.1f}% left out" if math.isfinite(loo) else ""
    )
    return TableSpec(title="Fitted factors", columns=("factor", "value"), rows=rows, note=note)


def _layout_refused(run: Measurement, efficiency: Efficiency) -> str:
    """Why the replay cannot place `run`, naming its layout and the replay's own reason (a
    prompt past the context window read as 'a precision the GPU lacks, a TP the model's
    heads cannot split, or weights beyond its memory', none of which it was)."""
    layout = f"{run.model} on {run.gpu} {run.precision.value} tp{run.tp} pp{run.pp}"
    reason = replay_refusal(run, efficiency) or "no figure came of it"
    return f"{layout}: the replay cannot run this layout: {reason}"


def _not_placed(run: Measurement, efficiency: Efficiency) -> Issue:
    """A run the replay cannot place: no profile comes of runs like it alone (the file
    written held the base profile's factors as if fitted, and a NaN error)."""
    message = (
        f"{_layout_refused(run, efficiency)}; so no run can be fitted and no profile was written"
    )
    return Issue(run.source, None, "", message)


def _check_readable(factors: dict, measurements: list[Path]) -> None:
    """The fitted factors within the bounds a profile file is read with
    (models.physics.efficiency.EfficiencyOverrides): a one-user run whose TTFT is a
    minute fitted a request overhead past 10 s, and the profile written was refused by
    every command that used it."""
    from pydantic import ValidationError

    from models.physics.efficiency import EfficiencyOverrides

    try:
        EfficiencyOverrides(**factors)
    except ValidationError as error:
        raise InputError(
            [
                Issue(
                    ", ".join(map(str, measurements)),
                    None,
                    ".".join(map(str, item["loc"])),
                    f"fitted to {item['input']!r}: {item['msg'].removeprefix('Value error, ')}; "
                    "no profile was written (are the runs' latencies in ms?)",
                )
                for item in error.errors()
            ]
        ) from None


def _check_run_flags(
    measurements: list[Path], output: Path, name: str | None, *run_flags: object
) -> None:
    """Flags that would change nothing exit 2 naming each: an empty --name (the file's
    stem was used without a word), and the JSON results' --model ... --concurrency where
    every input is a CSV, whose rows give them as columns. A profile name (--name, or
    -o's stem) that is not UTF-8 text is refused: the profile could not hold it."""
    if name is not None and not name.strip():
        raise InputError(
            [
                Issue(
                    "command line",
                    None,
                    "--name",
                    "is empty; give a name or leave it out (the file's stem)",
                )
            ]
        )
    flag, text = ("--name", name) if name is not None else ("-o", output.stem)
    if (problem := not_utf8(text, "name")) is not None:  # the profile file could not hold it
        raise InputError([Issue("command line", None, flag, problem)])
    if (problem := long_name(text)) is not None:  # printed whole on every report's header
        raise InputError([Issue("command line", None, flag, problem)])
    flags = ("--model", "--gpu", "--precision", "--kv-precision", "--tp", "--pp", "--concurrency")
    given = [flag for flag, value in zip(flags, run_flags, strict=True) if value is not None]
    if given and all(path.suffix.lower() == ".csv" for path in measurements):
        why = "describes JSON results only; every input is a CSV, whose rows give it as a column"
        raise InputError([Issue("command line", None, flag, why) for flag in given])


def calibrate(
    measurements: Annotated[
        list[Path],
        typer.Argument(
            help="Benchmark results: a CSV (columns model, gpu, precision, tp, [pp, "
            "kv_precision,] isl, osl, concurrency, [num_requests,] output_tok_s, "
            "ttft_mean_ms, tpot_mean_ms), or the JSON of vllm bench serve, genai-perf, "
            "aiperf or trtllm-bench."
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The profile file to write (.yaml).")
    ],
    name: Annotated[
        str | None, typer.Option(help="The profile's name in reports (default: the file's stem).")
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(help="The catalog profile the fit starts from and keeps the rest of."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Catalog model of JSON results.")] = None,
    gpu: Annotated[str | None, typer.Option(help="Catalog GPU of JSON results.")] = None,
    precision: Annotated[str | None, typer.Option(help="Weight precision of JSON results.")] = None,
    kv_precision: Annotated[str | None, typer.Option(help="KV precision of JSON results.")] = None,
    tp: Annotated[
        int | None,
        typer.Option(help="TP of JSON results.", callback=within(limits.PARALLEL_DEGREE)),
    ] = None,
    pp: Annotated[
        int | None,
        typer.Option(help="PP of JSON results.", callback=within(limits.PARALLEL_DEGREE)),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            help="Requests in flight, where a result omits it.",
            callback=within(flag_limits.CONCURRENT_USERS),
        ),
    ] = None,
    leave_one_out: Annotated[
        bool,
        typer.Option(
            help="Refit without each run to report its error as an unseen run (at most "
            f"{MAX_LEAVE_ONE_OUT_RUNS} runs: one fit more per run)."
        ),
    ] = True,
    json_out: JsonOnly = None,
) -> None:
    """Fit an engine profile (efficiency factors) on one's own benchmark runs and write it
    for `engine: PROFILE.yaml` in an instance or `--engine PROFILE.yaml`; each run is
    replayed as the tool ran it (C users starting together, fixed lengths) and the fit
    and leave-one-out error of every run are printed. With a one-user (concurrency 1) run
    and a second TTFT (under load, or another prompt length) it also fits the request
    overhead, the fixed cost before the engine (HTTP, tokenisation, scheduling) the tools
    count in every TTFT: the median over the one-user runs of measured TTFT less the
    replayed one; the plan and perf then add it to every TTFT."""
    if output.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(
            [Issue("command line", None, "--output", "the profile file must end in .yaml")]
        )
    check_targets(((output, PROFILE), (json_out, JSON)), (*measurements, *read_files(engine)))
    _check_run_flags(
        measurements, output, name, model, gpu, precision, kv_precision, tp, pp, concurrency
    )
    try:
        base_engine = check_engine(engine)
    except UnknownEngine as error:
        raise InputError([Issue("command line", None, "--engine", str(error))]) from None
    defaults = RunDefaults(model, gpu, precision, kv_precision, tp, pp, concurrency)
    runs = read_measurements(list(measurements), defaults)
    too_fast = beyond_physics(runs, base_efficiency(runs, base_engine))
    if too_fast:
        raise InputError(too_fast)
    refusal = leave_one_out_refusal(runs) if leave_one_out else None
    if refusal:
        raise InputError([Issue("command line", None, "--leave-one-out", refusal)])
    err.print(f"fitting {counted(len(runs), 'run')} ...", markup=False)
    fit = fit_profile(runs, base_engine, leave_one_out=leave_one_out)
    if not any(run_fit.predicted for run_fit in fit.runs):
        raise InputError([_not_placed(run_fit.run, fit.efficiency) for run_fit in fit.runs])
    for run_fit in fit.runs:  # fitted without it: said, not only '(no fit)' in the table
        if not run_fit.predicted:
            err.print(
                f"warning: {run_fit.run.source}: {_layout_refused(run_fit.run, fit.efficiency)}; "
                "left out of the fit",
                markup=False,
            )
    poor = fit.median_abs_error_pct()
    if poor > POOR_FIT_PCT:
        err.print(
            f"warning: the fitted profile misses its own runs by a median |error| of "
            f"{poor:.0f}%: no factors within their bounds reach these figures; check the "
            "runs' units (output tokens/s of the replica, latencies in ms) before "
            "planning with it",
            markup=False,
        )
    date = datetime.date.today().isoformat()
    document = profile_document(
        fit, name or output.stem, base_engine, [str(m) for m in measurements], date
    )
    _check_readable(document["by_key"]["default"], measurements)
    header = (
        f"{PROFILE_OPENING} on {date}.\n"
        "# Use it with `engine: <this file>` in an instance or `--engine <this file>`.\n"
    )
    text = header + yaml.safe_dump(document, sort_keys=False)
    write_text(output, text, tuple(measurements), kind=PROFILE)
    console = err if to_stdout(json_out) else out
    print_tables([], [fit_table(fit), factors_table(fit)], console=console)
    console.print(f"wrote {output}", markup=False)
    emit_json(json_out, document, tuple(measurements))
