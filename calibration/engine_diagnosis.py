"""Two diagnoses of the engine profiles' largest errors, on the rows of `calibration.engines`
(run `python -m calibration.engine_diagnosis`); they fit nothing into the catalog.

Depth of the step overhead. The profiles hold one fixed step overhead per engine and
generation (`Efficiency.step_overhead_s`, added once per iteration). If the overhead were
host-side kernel launches, it would grow with the kernels a step launches, i.e. with the
model's layers L:

    overhead(L) = a + b x L          (constant: b = 0; per layer only: a = 0)

`depth_forms` fits each form on a group's closed-loop fit runs with the loss of
`calibration.engines.fit_group` (mean squared log error of output tokens/s and mean TPOT,
`FIT_FIGURES`), every other factor as the catalog holds it, and reports the median |error|
and median signed error of every figure, fit and held-out runs apart (held-out runs are
never fitted). A form that explains the rows of different depths must lower the
held-out errors, not only the fit loss.

The overhead a one-user run implies (`implied_overheads`): its measured mean TPOT less the
replay's with no step overhead (the physics' pass alone; at C = 1 a decode step is one
pass plus the overhead, so the difference is the overhead the run measures).

Decode step and stalls apart (`stall_splits`). A closed-loop run's mean TPOT under load is
its decode iterations plus the prefill iterations that run between them (SGLang runs a
prefill batch alone, the decodes waiting); the tool's median inter-token latency is the
decode iteration alone where fewer than half the gaps carry a prefill, so

    stall = mean TPOT - median ITL

is what the prefills add to each token. Each run that prints a median ITL is split so,
measured and replayed: a TPOT error is the decode step's, the stalls', or both.

Term by term. `term_swaps` replays a profile's rows of one GPU (the held-out ones included)
with its catalog factors, then with one factor at a time taken from another profile's set
(`donor`), then with the donor's whole set: the factor whose swap moves the error most is
the term that dominates it.

Prefill under a burst (`prefill_rates`). A run that sends every request at once
(`calibration.engines.all_at_once`) with prompts `PREFILL_BOUND` times its replies or more
spends its duration prefilling: the tool's duration is N O / (output tokens/s), so its
prompt tokens/s are P / O x output tokens/s, and the replay's the same way. Their ratio is
the run's output tokens/s error; what it says about the engine is the FLOP rate the prompts
got, 2 x active parameters x prompt tokens/s over the GPUs' dense BF16 peak
(`achieved_bf16_share`: the linear layers alone, attention left out, so a floor), against
the profile's `prefill_flops_fraction`. Grouped by family (dense, MoE) and GPU: a profile
holds one prefill fraction per generation, so a family whose runs read one way and the
other family's the other is a kernel the factor cannot carry.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from calibration.engine_errors import catalog_efficiency
from calibration.engines import (
    FIT_FIGURES,
    FIT_REQUESTS_PER_USER,
    MISS_LOG,
    REPORT_REQUESTS_PER_USER,
    EngineData,
    EngineRun,
    all_at_once,
    load_engine_data,
    predict_run,
)
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.profiles.fit import FIGURES
from models.profiles.fitting import nelder_mead

DEPTH_FORMS = ("constant", "a + b x layers", "b x layers")
"""The step overhead's forms `depth_forms` compares (module docstring)."""
FIT_STEPS = 60
"""Nelder-Mead steps of one form's fit."""
SWAPPED = ("prefill_flops_fraction", "decode_flops_fraction", "hbm_fraction", "step_overhead_s")
"""The factors `term_swaps` takes from the donor one at a time."""
PREFILL_BOUND = 10
"""Prompt tokens per output token from which a burst run is read as prefill
(`prefill_rates`): the 2,000/100, 4,000/200 and 32,000/100 runs, not ShareGPT's ~1."""
PREFILL_MIN_PROMPT = 1000
"""Prompt tokens from which a burst run is read as prefill: the 128/4 runs measure how fast
the server admits 1,000 requests (their `held_out_reason`), not a prompt's prefill."""


@dataclass(frozen=True)
class FigureError:
    """The errors of one figure over a set of runs, in percent."""

    figure: str
    held_out: bool
    count: int
    median_abs_pct: float
    median_pct: float
    """Signed: the bias."""


def overhead_at_depth(a_s: float, b_s_per_layer: float, layers: int) -> float:
    """The step overhead of a model of `layers` layers: a + b x L."""
    return a_s + b_s_per_layer * layers


def _depth_efficiency(run: EngineRun, a_s: float, b_s: float) -> Efficiency:
    layers = llm_catalog()[run.run.model].layers
    return catalog_efficiency(run.engine, run.run.gpu, run.run.precision).model_copy(
        update={"step_overhead_s": overhead_at_depth(a_s, b_s, layers)}
    )


def _loss(runs: list[EngineRun], efficiency_of: Callable[[EngineRun], Efficiency]) -> float:
    terms = []
    for run in runs:
        predicted = predict_run(run, efficiency_of(run), FIT_REQUESTS_PER_USER)
        for figure in FIT_FIGURES:
            value, measured = predicted.get(figure, 0.0), getattr(run.run, figure)
            terms.append(math.log(value / measured) ** 2 if value > 0 else MISS_LOG**2)
    return float(np.mean(terms))


def figure_errors(
    runs: list[EngineRun], efficiency_of: Callable[[EngineRun], Efficiency]
) -> list[FigureError]:
    """Median |error| and bias of every figure over `runs`, fit and held out apart (each
    run replayed whole, as the report replays it)."""
    errors: dict[tuple[str, bool], list[float]] = {}
    for run in runs:
        predicted = predict_run(run, efficiency_of(run), REPORT_REQUESTS_PER_USER)
        for figure in FIGURES:
            measured = getattr(run.run, figure)
            value = predicted.get(figure, math.nan)
            errors.setdefault((figure, run.held_out), []).append((value - measured) / measured)
    return [
        FigureError(
            figure,
            held_out,
            len(values),
            100 * statistics.median(abs(v) for v in values),
            100 * statistics.median(values),
        )
        for (figure, held_out), values in sorted(errors.items())
    ]


def _softplus(z: float) -> float:
    return math.log1p(math.exp(z))


def depth_forms(
    data: EngineData, profile: str, generation: str
) -> dict[str, tuple[float, float, float, list[FigureError]]]:
    """Each form of `DEPTH_FORMS` fitted on the group's closed-loop fit runs: (a in s,
    b in s per layer, fit loss, errors of every run of the group). a and b are searched
    as softplus of the simplex coordinates (ms and 10 us units), so both stay >= 0."""
    runs = [
        r
        for r in data.runs
        if r.engine == profile and r.generation == generation and not all_at_once(r)
    ]
    fit = [r for r in runs if not r.held_out]
    unpack = {
        "constant": lambda v: (_softplus(v[0]) * 1e-3, 0.0),
        "a + b x layers": lambda v: (_softplus(v[0]) * 1e-3, _softplus(v[1]) * 1e-5),
        "b x layers": lambda v: (0.0, _softplus(v[0]) * 1e-5),
    }
    starts = {"constant": [1.5], "a + b x layers": [1.0, 1.0], "b x layers": [4.0]}
    out = {}
    for form in DEPTH_FORMS:
        best = nelder_mead(
            lambda v, form=form: _loss(fit, lambda r: _depth_efficiency(r, *unpack[form](v))),
            np.array(starts[form]),
            FIT_STEPS,
        )
        a_s, b_s = unpack[form](best)
        fitted = partial(_depth_efficiency, a_s=a_s, b_s=b_s)
        out[form] = (a_s, b_s, _loss(fit, fitted), figure_errors(runs, fitted))
    return out


def implied_overheads(data: EngineData) -> list[tuple[EngineRun, int, float]]:
    """Each one-user closed-loop run with its model's layers and the step overhead it
    implies, in seconds (module docstring)."""
    out = []
    for run in data.runs:
        if run.run.concurrency != 1 or run.run.tpot_mean_ms is None:
            continue
        bare = catalog_efficiency(run.engine, run.run.gpu, run.run.precision).model_copy(
            update={"step_overhead_s": 0.0}
        )
        predicted = predict_run(run, bare, REPORT_REQUESTS_PER_USER)
        if "tpot_mean_ms" in predicted:
            implied_s = (run.run.tpot_mean_ms - predicted["tpot_mean_ms"]) / 1e3
            out.append((run, llm_catalog()[run.run.model].layers, implied_s))
    return out


@dataclass(frozen=True)
class StallSplit:
    """One run's mean TPOT split into its decode step and its stalls, ms (module
    docstring), measured and as the replay gives them under the catalog's profile."""

    run: EngineRun
    measured_tpot_ms: float
    measured_itl_ms: float
    predicted_tpot_ms: float
    predicted_itl_ms: float

    @property
    def measured_stall_ms(self) -> float:
        return self.measured_tpot_ms - self.measured_itl_ms

    @property
    def predicted_stall_ms(self) -> float:
        return self.predicted_tpot_ms - self.predicted_itl_ms

    @property
    def itl_error_pct(self) -> float:
        """The decode step's signed error."""
        return (self.predicted_itl_ms / self.measured_itl_ms - 1) * 100


def stall_splits(data: EngineData) -> list[StallSplit]:
    """Every closed-loop run that prints a median ITL, split into its decode step and its
    stalls (module docstring), replayed whole as the report replays it."""
    out = []
    for run in data.runs:
        if run.itl_median_ms is None or run.run.tpot_mean_ms is None:
            continue
        efficiency = catalog_efficiency(run.engine, run.run.gpu, run.run.precision)
        predicted = predict_run(run, efficiency, REPORT_REQUESTS_PER_USER, median=True)
        if "itl_median_ms" in predicted:
            out.append(
                StallSplit(
                    run,
                    run.run.tpot_mean_ms,
                    run.itl_median_ms,
                    predicted["tpot_mean_ms"],
                    predicted["itl_median_ms"],
                )
            )
    return out


def term_swaps(
    data: EngineData, profile: str, gpu: str, donor: str
) -> dict[str, list[FigureError]]:
    """The errors of `profile`'s runs on `gpu` with its catalog factors (`catalog`), with
    each factor of `SWAPPED` taken from `donor`'s set for that GPU, and with the donor's
    whole set (`donor`)."""
    runs = [r for r in data.runs if r.engine == profile and r.run.gpu == gpu]

    def swapped(names: tuple[str, ...]) -> Callable[[EngineRun], Efficiency]:
        def efficiency_of(run: EngineRun) -> Efficiency:
            own = catalog_efficiency(run.engine, run.run.gpu, run.run.precision)
            other = efficiency_for(run.run.gpu, run.run.precision, engine=donor)
            return own.model_copy(update={name: getattr(other, name) for name in names})

        return efficiency_of

    variants = {"catalog": swapped(()), "donor": swapped(SWAPPED)}
    variants |= {name: swapped((name,)) for name in SWAPPED}
    return {name: figure_errors(runs, of) for name, of in variants.items()}


def _print(title: str, errors: list[FigureError]) -> None:
    print(title)
    for e in errors:
        split = "held-out" if e.held_out else "fit"
        print(
            f"    {e.figure:20s} {split:8s} n={e.count:2d}  median |error| "
            f"{e.median_abs_pct:6.1f}%  bias {e.median_pct:+6.1f}%"
        )


@dataclass(frozen=True)
class PrefillRate:
    """One prefill-bound burst run's prompt tokens/s, measured and replayed (module
    docstring), and the FLOP share of the GPUs' BF16 peak the measured rate took."""

    run: EngineRun
    measured_tokens_per_s: float
    replayed_tokens_per_s: float
    achieved_bf16_share: float
    prefill_flops_fraction: float
    """The profile's factor the replay ran on."""

    @property
    def error_pct(self) -> float:
        return (self.replayed_tokens_per_s / self.measured_tokens_per_s - 1) * 100


def prompt_tokens_per_s(prompt_tokens: float, output_tokens: float, output_per_s: float) -> float:
    """A burst run's prompt tokens/s: P / O x output tokens/s (its duration N O / output/s)."""
    return prompt_tokens / output_tokens * output_per_s


def prefill_rates(data: EngineData) -> list[PrefillRate]:
    """Every all-at-once run with P >= `PREFILL_BOUND` x O and P >= `PREFILL_MIN_PROMPT`,
    replayed whole under the catalog's profile (module docstring)."""
    out = []
    for run in data.runs:
        m = run.run
        bound = m.prompt_tokens >= max(PREFILL_BOUND * m.output_tokens, PREFILL_MIN_PROMPT)
        if not all_at_once(run) or not bound:
            continue
        efficiency = catalog_efficiency(run.engine, m.gpu, m.precision)
        predicted = predict_run(run, efficiency, REPORT_REQUESTS_PER_USER)
        if "output_tokens_per_s" not in predicted:
            continue
        measured = prompt_tokens_per_s(m.prompt_tokens, m.output_tokens, m.output_tokens_per_s)
        llm, gpu = llm_catalog()[m.model], gpu_catalog()[m.gpu]
        flops_per_s = 2 * llm.active_params() * measured / (m.tp * m.pp)
        out.append(
            PrefillRate(
                run,
                measured,
                prompt_tokens_per_s(
                    m.prompt_tokens, m.output_tokens, predicted["output_tokens_per_s"]
                ),
                flops_per_s / (gpu.dense_tflops.bf16 * 1e12),
                efficiency.prefill_flops_fraction,
            )
        )
    return out


def main() -> None:
    data, _ = load_engine_data()
    print("step overhead one-user runs imply (measured mean TPOT - the pass alone):")
    for run, layers, implied_s in implied_overheads(data):
        split = "held-out" if run.held_out else "fit"
        print(f"  {run.label:62s} {layers:3d} layers {split:8s} {implied_s * 1e3:6.2f} ms")
    print("\nstep overhead against depth, sglang-0.5 on Blackwell (closed-loop runs):")
    for form, (a_s, b_s, loss, errors) in depth_forms(data, "sglang-0.5", "blackwell").items():
        title = f"  {form}: a = {a_s * 1e3:.3f} ms, b = {b_s * 1e6:.2f} us/layer, loss {loss:.4f}"
        _print(title, errors)
    print("\nmean TPOT = decode step (median ITL) + stalls, measured / replayed, ms:")
    for split in stall_splits(data):
        print(
            f"  {split.run.label:62s} step {split.measured_itl_ms:6.2f} / "
            f"{split.predicted_itl_ms:6.2f} ({split.itl_error_pct:+6.1f}%)  stalls "
            f"{split.measured_stall_ms:6.2f} / {split.predicted_stall_ms:6.2f}"
        )
    print("\nprefill under a burst (P >= 10 O, 1,000): prompt tok/s measured / replayed, share:")
    rates = prefill_rates(data)
    for rate in rates:
        print(
            f"  {rate.run.label:62s} {rate.measured_tokens_per_s:8.0f} / "
            f"{rate.replayed_tokens_per_s:8.0f} ({rate.error_pct:+6.1f}%)  share "
            f"{rate.achieved_bf16_share:.2f} (profile {rate.prefill_flops_fraction:.2f})"
        )
    groups: dict[str, list[float]] = {}
    for rate in rates:
        family = "moe" if llm_catalog()[rate.run.run.model].is_moe else "dense"
        groups.setdefault(f"{family} {rate.run.run.gpu}", []).append(rate.error_pct)
    for name, errors in sorted(groups.items()):
        median = statistics.median(errors)
        print(f"  {name:24s} runs {len(errors):2d}  median replayed error {median:+6.1f}%")
    print("\nvllm-0.10 on h100-sxm, one factor at a time from vllm-0.11's Hopper set:")
    for name, errors in term_swaps(data, "vllm-0.10", "h100-sxm", "vllm-0.11").items():
        _print(f"  {name}:", errors)


if __name__ == "__main__":
    main()
