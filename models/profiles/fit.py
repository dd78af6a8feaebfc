"""An engine profile fitted on the user's own benchmark runs (`fleetplan calibrate`).

Each run (`models.profiles.measurements.Measurement`) is replayed as the benchmark tool ran it:
C closed-loop users with fixed lengths, iteration by iteration on the replica's step model
(`models.serving.latency.latency_at_concurrency_burst`). The replay predicts the three
figures the tools print: output tokens/s, mean TTFT and mean TPOT. The fit chooses the
efficiency factors that minimise the mean squared log error over every figure of every
run (`models.profiles.fitting`):

    loss(f) = mean over runs r and figures m of log(predicted_rm(f) / measured_rm)^2

Fitted factors: the FLOP fractions of prefill and decode, the HBM fraction and the fixed
step overhead: what an engine's kernels and scheduler set. Layout physics (memory,
collectives) and engine settings (token budget, batch cap) stay as the base profile gives
them; `FITTED` says which. The error of each run is reported twice: in the fit, and
left out of it (the fit repeated without that run, then asked to predict it), the honest
figure for a run the profile has not seen.

The request overhead o (`Efficiency.request_overhead_s`: HTTP, tokenisation and scheduling
before the engine, which the tools count in every TTFT) is fitted as
`calibration.engines` fits it, on the one-user (C = 1) runs' mean TTFT only: a lone
user's request never queues, so its replayed mean TTFT is TTFT_0 + o exactly, and

    o = max(0, median over the one-user runs of (measured mean TTFT - replayed TTFT_0))

with TTFT_0 the replay without o. o is profiled out of the fit: at every point the
minimiser tries, o is set by the rule on that point's factors, so the loss sees what the
factors cannot explain once o has taken the one-user runs' common excess (the spread of
their residuals, the TTFTs under load, every tokens/s and TPOT: o lengthens each user's
loop), and the returned factors and o satisfy the rule together. Telling o from the
prefill needs a second TTFT beside a one-user run's (under load, or of another prompt
length): without it o stays as the base profile has it (0 for the TensorRT-LLM profiles).
"""

import math
from dataclasses import dataclass

import numpy as np

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.profiles.fitting import BOUNDS, from_vector, nelder_mead, to_vector
from models.profiles.measurements import Measurement
from models.schema.errors import Issue
from models.schema.quantities import counted
from models.serving.closed_loop import FIXED, LengthSpread
from models.serving.latency import latency_at_concurrency_burst
from models.serving.replica import Role, ServingContext, TrafficMix, replica_of_pool

FITTED = ("prefill_flops_fraction", "decode_flops_fraction", "hbm_fraction", "step_overhead_s")
FIT_REQUESTS_PER_USER = 3
"""Requests per user in the replay the fit runs: the bunched first wave and two that
follow (the replay's mean moves by a few % from 3 to 10 requests; the fit runs the replay
thousands of times)."""
FIT_STEPS = 160
"""Nelder-Mead steps of one fit (four factors)."""
MISS_LOG = math.log(3.0)
"""What a run the model cannot place (no layout fits) costs in the loss: a 3x miss."""
FIGURES = ("output_tokens_per_s", "ttft_mean_ms", "tpot_mean_ms")
OVERHEAD = "request_overhead_s"


@dataclass(frozen=True)
class RunFit:
    """One run's measured and predicted figures, in the fit and left out of it."""

    run: Measurement
    predicted: dict[str, float]
    left_out: dict[str, float]
    """Predicted by the fit without this run (empty when it was not computed)."""

    def errors_pct(self, predicted: dict[str, float]) -> dict[str, float]:
        """Signed % error of each measured figure."""
        out = {}
        for figure in FIGURES:
            measured = getattr(self.run, figure)
            if measured is not None and figure in predicted:
                out[figure] = (predicted[figure] - measured) / measured * 100
        return out


@dataclass(frozen=True)
class ProfileFit:
    """The fitted factors and how well they fit."""

    efficiency: Efficiency
    runs: list[RunFit]
    overhead_runs: int = 0
    """One-user runs the request overhead was fitted on (0: the base profile's)."""

    def median_abs_error_pct(self, left_out: bool = False) -> float:
        errors = [
            abs(e)
            for fit in self.runs
            for e in fit.errors_pct(fit.left_out if left_out else fit.predicted).values()
        ]
        return float(np.median(errors)) if errors else math.nan


def predict(
    run: Measurement,
    efficiency: Efficiency,
    requests_per_user: int,
    spread: LengthSpread = FIXED,
    median: bool = False,
) -> dict[str, float]:
    """The run's figures as the replay gives them under `efficiency`, its lengths spread
    as `spread` draws them (empty when the replay refuses the run: `replay_refusal`); with
    `median`, its p50 TTFT and its median inter-token gap too (`ttft_median_ms`,
    `itl_median_ms`: reported beside the means, never fitted)."""
    try:
        replay = _replay(run, efficiency, requests_per_user, spread)
    except ValueError:
        return {}
    figures = {
        "output_tokens_per_s": replay.output_tokens_per_s,
        "ttft_mean_ms": replay.ttft_mean_s * 1e3,
        "tpot_mean_ms": replay.tpot_mean_s * 1e3,
    }
    if not median:
        return figures
    return figures | {
        "ttft_median_ms": replay.ttft_p50_s * 1e3,
        "itl_median_ms": replay.itl_p50_s * 1e3,
    }


def replay_refusal(
    run: Measurement, efficiency: Efficiency, requests_per_user: int = FIT_REQUESTS_PER_USER
) -> str | None:
    """Why the replay cannot run `run` (a layout that does not fit, a prompt past the
    context window, a replay past its iteration bound), or None when it can."""
    try:
        _replay(run, efficiency, requests_per_user, FIXED)
    except ValueError as error:
        return str(error)
    return None


def _replay(run: Measurement, efficiency: Efficiency, requests_per_user: int, spread: LengthSpread):
    config = replica_of_pool(
        gpu_catalog()[run.gpu], llm_catalog()[run.model], run.precision, run.kv_precision,
        tp=run.tp, pp=run.pp, role=Role.UNIFIED, ep=run.ep, dp=1, redundant_experts=0,
        speculation=None,
    )  # fmt: skip
    mix = TrafficMix.fixed(run.prompt_tokens, run.output_tokens)
    per_user = max(1, min(requests_per_user, math.ceil(run.requests / run.concurrency)))
    return latency_at_concurrency_burst(
        ServingContext(config, mix, efficiency), run.concurrency, per_user, spread
    )


def replay_key(run: Measurement, requests_per_user: int) -> tuple:
    """What a run's replay depends on (`_replay`): its layout, lengths, users and requests
    per user, not its figures or its line. Runs of one key replay alike."""
    per_user = max(1, min(requests_per_user, math.ceil(run.requests / run.concurrency)))
    return (
        run.model, run.gpu, run.precision, run.kv_precision, run.tp, run.pp, run.ep,
        run.prompt_tokens, run.output_tokens, run.concurrency, per_user,
    )  # fmt: skip


def loss(runs: list[Measurement], efficiency: Efficiency, requests_per_user: int) -> float:
    """Mean squared log error over every measured figure (module docstring). Each distinct
    replay (`replay_key`) runs once: a file of 200 repeats of one shape replayed it 200
    times at every step of the fit (2 minutes, and leave-one-out 200 fits of that)."""
    terms = []
    replays: dict[tuple, dict[str, float]] = {}
    for run in runs:
        key = replay_key(run, requests_per_user)
        if key not in replays:
            replays[key] = predict(run, efficiency, requests_per_user)
        predicted = replays[key]
        for figure in FIGURES:
            measured = getattr(run, figure)
            if measured is None:
                continue
            value = predicted.get(figure, 0.0)
            terms.append(math.log(value / measured) ** 2 if value > 0 else MISS_LOG**2)
    return float(np.mean(terms)) if terms else 0.0


def _lone_ttft(run: Measurement) -> bool:
    """A one-user run with a measured TTFT: what the request overhead is fitted on."""
    return run.concurrency == 1 and run.ttft_mean_ms is not None


def overhead_fittable(runs: list[Measurement]) -> bool:
    """Whether `runs` tell the request overhead from the prefill: a one-user run's TTFT
    and another TTFT, under load or of another prompt length (module docstring)."""
    lone = [run for run in runs if _lone_ttft(run)]
    return bool(lone) and any(
        run.ttft_mean_ms is not None
        and (run.concurrency > 1 or run.prompt_tokens != lone[0].prompt_tokens)
        for run in runs
    )


def fit_request_overhead(
    runs: list[Measurement], efficiency: Efficiency, requests_per_user: int
) -> Efficiency:
    """`efficiency` with o = max(0, median over the one-user runs of measured mean TTFT -
    the replay's without o) (module docstring); unchanged without a one-user run."""
    bare = efficiency.model_copy(update={OVERHEAD: 0.0})
    residuals_s = []
    for run in filter(_lone_ttft, runs):
        predicted = predict(run, bare, requests_per_user)
        if run.ttft_mean_ms is not None and "ttft_mean_ms" in predicted:
            residuals_s.append((run.ttft_mean_ms - predicted["ttft_mean_ms"]) / 1e3)
    if not residuals_s:
        return efficiency
    return efficiency.model_copy(update={OVERHEAD: max(0.0, float(np.median(residuals_s)))})


def fit_factors(
    runs: list[Measurement],
    base: Efficiency,
    requests_per_user: int = FIT_REQUESTS_PER_USER,
    steps: int = FIT_STEPS,
) -> Efficiency:
    """The factors `FITTED` that minimise `loss` over `runs`, the others as in `base`;
    where `overhead_fittable`, with the request overhead at every point the minimiser
    tries set by `fit_request_overhead` on those factors (o profiled out: the returned
    factors and o satisfy the rule of the module docstring together)."""
    overhead = overhead_fittable(runs)

    def at(vector: np.ndarray) -> Efficiency:
        efficiency = from_vector(vector, base, FITTED)
        return fit_request_overhead(runs, efficiency, requests_per_user) if overhead else efficiency

    best = nelder_mead(
        lambda v: loss(runs, at(v), requests_per_user),
        to_vector(base, FITTED),
        steps=steps,
    )
    return at(best)


UNITS_MISS = 3.0
"""How far past the fastest replay a measured figure may be before it is read as a units
mistake (the replay's own spread is tens of %; latencies given in seconds are 1000x)."""
COLUMNS = {
    "output_tokens_per_s": "output_tok_s",
    "ttft_mean_ms": "ttft_mean_ms",
    "tpot_mean_ms": "tpot_mean_ms",
}
"""Each figure's column in a measurements CSV (and in the profile's fit record)."""


def fastest(run: Measurement, base: Efficiency) -> dict[str, float]:
    """The run's figures replayed with every fitted factor at its most favourable bound
    (`models.profiles.fitting.BOUNDS`: the most FLOPs and HBM bandwidth, the least step
    overhead) and no request overhead: no fit can predict a faster run."""
    best = {name: BOUNDS[name][0 if name.endswith("_s") else 1] for name in FITTED}
    return predict(run, base.model_copy(update={**best, OVERHEAD: 0.0}), FIT_REQUESTS_PER_USER)


def beyond_physics(runs: list[Measurement], base: Efficiency) -> list[Issue]:
    """Each measured figure more than `UNITS_MISS` x faster than `fastest` allows: a
    latency in seconds where ms are read (0.012 for a TPOT of 12 ms). The fit pinned
    every factor at its bound and wrote the profile, exit 0, with a 24,578% error."""
    issues = []
    for run in runs:
        floor = fastest(run, base)
        for figure, column in COLUMNS.items():
            measured = getattr(run, figure)
            if measured is None or figure not in floor:
                continue
            best = floor[figure]
            faster = measured / best if figure == "output_tokens_per_s" else best / measured
            if faster > UNITS_MISS:
                unit = "tokens/s" if figure == "output_tokens_per_s" else "ms"
                side = "above" if figure == "output_tokens_per_s" else "below"
                issues.append(
                    Issue(
                        run.source,
                        None,
                        run.named(column),
                        f"{measured:,.4g} {unit} is {_times(faster)}x {side} the fastest the "
                        f"layout can run ({best:,.4g} {unit} with every factor at its most "
                        "favourable bound); no profile was written (are the latencies in ms, "
                        "the throughput in output tokens/s?)",
                    )
                )
    return issues


def _times(ratio: float) -> str:
    """A ratio as a message states it: whole below a million (400), else in three
    significant digits (5e+300: a TPOT of 1e-300 ms read as 301 digits)."""
    return f"{ratio:,.0f}" if ratio < 1e6 else f"{ratio:.3g}"


def base_efficiency(runs: list[Measurement], engine: str | None) -> Efficiency:
    """Where the fit starts, and what it leaves alone: the base profile's factors for the
    first run's GPU and precision."""
    return efficiency_for(runs[0].gpu, runs[0].precision, engine=engine)


MAX_LEAVE_ONE_OUT_RUNS = 30
"""Runs leave-one-out refits at most: it fits once more per run, so its time grows with
the square of the runs (200 runs of distinct shapes: 200 fits of minutes each, hours
with nothing printed but 'fitting 200 runs ...'). Past it `fit_profile` refuses and
the command says to fit without it."""


def leave_one_out_refusal(runs: list[Measurement]) -> str | None:
    """Why leave-one-out is not run on `runs` (more than `MAX_LEAVE_ONE_OUT_RUNS`), or None."""
    if len(runs) <= MAX_LEAVE_ONE_OUT_RUNS:
        return None
    return (
        f"leave-one-out refits once per run: {len(runs):,} runs would fit "
        f"{len(runs) + 1:,} times, at most {MAX_LEAVE_ONE_OUT_RUNS} runs are refitted "
        "(minutes each past a few dozen distinct runs); give --no-leave-one-out to fit them "
        "all once, or fewer runs"
    )


def fit_profile(
    runs: list[Measurement],
    engine: str | None = None,
    leave_one_out: bool = True,
    requests_per_user: int = FIT_REQUESTS_PER_USER,
    steps: int = FIT_STEPS,
) -> ProfileFit:
    """Fit `FITTED` on every run, then (with `leave_one_out`) once more per run without
    it, to predict it as an unseen run.

    Raises:
        ValueError: leave-one-out on more than `MAX_LEAVE_ONE_OUT_RUNS` runs.
    """
    refusal = leave_one_out_refusal(runs) if leave_one_out else None
    if refusal:
        raise ValueError(refusal)
    base = base_efficiency(runs, engine)
    fitted = fit_factors(runs, base, requests_per_user, steps)
    fits = []
    for index, run in enumerate(runs):
        left_out: dict[str, float] = {}
        if leave_one_out and len(runs) > 1:
            others = runs[:index] + runs[index + 1 :]
            left_out = predict(
                run, fit_factors(others, base, requests_per_user, steps), requests_per_user
            )
        fits.append(RunFit(run, predict(run, fitted, requests_per_user), left_out))
    lone = sum(map(_lone_ttft, runs)) if overhead_fittable(runs) else 0
    return ProfileFit(fitted, fits, lone)


def profile_document(
    fit: ProfileFit, name: str, base_engine: str, sources: list[str], date: str
) -> dict:
    """The profile file's content (`models.physics.profile_files`): every factor of the
    fitted set under `by_key.default` (no fallback: a key the file leaves out would let the
    base profile's generation set override the fit), and what the fit measured."""
    figures = COLUMNS
    rows = []
    for run_fit in fit.runs:
        run = run_fit.run
        row: dict = {"source": run.source, "concurrency": run.concurrency}
        for figure, label in figures.items():
            measured = getattr(run, figure)
            if measured is None:
                continue
            row[label] = {"measured": round(measured, 4)}
            if figure in run_fit.predicted:
                row[label]["predicted"] = round(run_fit.predicted[figure], 4)
            if figure in run_fit.left_out:
                row[label]["left_out"] = round(run_fit.left_out[figure], 4)
        rows.append(row)
    fit_summary: dict = {
        "rows": len(fit.runs),
        "fitted": list(FITTED) + ([OVERHEAD] if fit.overhead_runs else []),
        "median_abs_error_pct": round(fit.median_abs_error_pct(), 2),
    }
    if fit.overhead_runs:
        fit_summary["request_overhead_one_user_runs"] = fit.overhead_runs
    loo = fit.median_abs_error_pct(left_out=True)
    if math.isfinite(loo):
        fit_summary["leave_one_out_median_abs_error_pct"] = round(loo, 2)
    fit_summary["runs"] = rows
    factors = {
        key: (float(f"{value:.6g}") if isinstance(value, float) else value)
        # numbers only: two-batch overlap is a deployment's switch, set in the instance,
        # and the engine whose rule it follows is the fallback profile's (engine_family), as
        # is its schedule (prefill_first, kv_preemption: the fallback profile's settings)
        for key, value in fit.efficiency.model_dump(
            exclude={"two_batch_overlap", "overlap_engine", "prefill_first", "kv_preemption"}
        ).items()
    }
    return {
        "kind": "fleetplan-engine-profile",
        "profile": name,
        "data": (
            f"{counted(len(fit.runs), 'run')} from {', '.join(sources)}; fitted {date} "
            f"from {base_engine}"
        ),
        "by_key": {"default": factors},
        "fit": fit_summary,
    }
