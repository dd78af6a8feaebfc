"""The checks behind "How good is the performance model?": the calibration's error figures,
computed by the library functions `make bench`'s reports print them with
(tests/bench/test_calibration.py, tests/bench/test_moe_calibration.py and
`python -m calibration.wide_ep`), on the rows shipped in calibration/data/.

Each figure is a median |error| (or a signed median) in percent, printed to the digits
the reports print; the rows and the catalog's profiles are read once a session.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tests.readme.registry import check
from tests.readme.runner import Runner

BENCH = "make bench"
ENGINES = "python -m pytest tests/bench/test_calibration.py -k engine_profiles -s"
WIDE_EP = "python -m calibration.wide_ep"


def _pct(value: float, digits: int = 1) -> str:
    """A percentage already in percent, as the reports print it (`6.5%`)."""
    return f"{value:.{digits}f}%"


def _median_abs(errors: list[float]) -> float:
    return float(np.median(np.abs(errors)))


# --- dense throughput, serving ITL and MLPerf (tests/bench/test_calibration.py) -------------


@functools.cache
def _dense() -> tuple[list, np.ndarray]:
    """Every calibration row and its prediction on the catalog's factors, as
    test_calibration_report computes them."""
    from calibration.calibrate import catalog_efficiency, predict
    from calibration.rows import load_rows

    rows, _skipped = load_rows()
    return rows, np.array([predict(row, catalog_efficiency(row)) for row in rows])


def _dense_median(select) -> tuple[int, float]:
    """Rows placed and their median |error| in percent (the report's `_summary`)."""
    from calibration.calibrate import abs_pct_errors

    rows, predicted = _dense()
    chosen = [(row.measured, value) for row, value in zip(rows, predicted, strict=True)]
    picked = [pair for row, pair in zip(rows, chosen, strict=True) if select(row)]
    placed = [(measured, value) for measured, value in picked if not math.isnan(value)]
    measured = np.array([m for m, _ in placed])
    values = np.array([v for _, v in placed])
    return len(placed), float(np.median(abs_pct_errors(values, measured)))


@check("calibration-dense", BENCH)
def _calibration_dense(run: Runner) -> dict[str, str]:
    latency = ("ttft", "itl")
    fit_n, fit = _dense_median(lambda r: not r.held_out and r.kind == "offline")
    held_n, held = _dense_median(
        lambda r: r.held_out and r.source == "trtllm" and r.kind == "offline"
    )
    _, trtllm_020 = _dense_median(lambda r: r.engine == "trtllm-0.20" and r.kind not in latency)
    v10_n, v10 = _dense_median(lambda r: r.engine == "trtllm-1.0" and r.kind not in latency)
    _, itl_fit = _dense_median(lambda r: r.kind == "itl" and not r.held_out)
    _, itl_held = _dense_median(lambda r: r.kind == "itl" and r.held_out)
    _, offline = _dense_median(lambda r: r.source == "mlperf" and r.kind == "offline")
    _, server = _dense_median(lambda r: r.kind == "server")
    _, v50 = _dense_median(lambda r: r.source == "mlperf" and r.engine.endswith("-v5.0"))
    _, v51 = _dense_median(lambda r: r.source == "mlperf" and r.engine.endswith("-v5.1"))
    return {
        "fit": f"{_pct(fit)} on {fit_n} fit rows",
        "held": f"{_pct(held)} on {held_n} held out",
        "trtllm020": f"trtllm-0.20 rows {_pct(trtllm_020)}",
        "v10": f"the {v10_n} TensorRT-LLM v1.0 rows, never fitted, {_pct(v10)}",
        "itl": f"{_pct(itl_fit)} fit / {_pct(itl_held)} held out",
        "mlperf": f"{_pct(offline)} (Offline) and {_pct(server)} (Server",
        "rounds": f"{_pct(v50)} and {_pct(v51)}",
    }


# --- MoE at maximum throughput (tests/bench/test_moe_calibration.py) ------------------------


@functools.cache
def _moe() -> dict:
    from calibration.moe_report import moe_report
    from calibration.moe_rows import load_moe_rows
    from calibration.rows import calibration_dir

    rows, _skipped = load_moe_rows(calibration_dir())
    _lines, summaries = moe_report(rows)
    return {split: {s.name: s for s in found} for split, found in summaries.items()}


@check("calibration-moe", BENCH)
def _calibration_moe(run: Runner) -> dict[str, str]:
    held, fit = _moe()["held out"], _moe()["fit"]
    every, dep = held["all MoE rows"], held["family DEP"]
    wide = [held["model deepseek-r1"], held["model qwen3-235b-a22b"]]
    low, high = sorted(f"{s.median_abs_pct:.0f}" for s in wide)
    return {
        "all": f"{_pct(fit['all MoE rows'].median_abs_pct)} fit and "
        f"{_pct(every.median_abs_pct)} on {len(every.errors_pct)} held-out rows",
        "signed": f"signed {every.bias_pct:+.1f}%",
        "tp": f"TP {_pct(held['family TP'].median_abs_pct)}",
        "dep": f"expert parallelism {_pct(dep.median_abs_pct)}, signed {dep.bias_pct:+.1f}%",
        "wide": f"the {sum(len(s.errors_pct) for s in wide)} wide-EP DeepSeek-R1 and "
        f"Qwen3-235B rows {low}-{high}%",
    }


# --- wide EP across servers (python -m calibration.wide_ep) ---------------------------------


@check("calibration-wide-ep", WIDE_EP)
def _calibration_wide_ep(run: Runner) -> dict[str, str]:
    from calibration.wide_ep import error_pct, load_wide_ep_rows, predict_wide_ep

    rows = load_wide_ep_rows()

    def error(engine: str, phase: str, tbo: bool, balanced: bool, length: float = 0) -> float:
        (row,) = [
            r
            for r in rows
            if (r.engine, r.phase, r.two_batch_overlap, r.balanced_routing)
            == (engine, phase, tbo, balanced)
            and (not length or r.input_len == length)
        ]
        return error_pct(predict_wide_ep(row), row.measured)

    prefill = [error("sglang", "prefill", True, False, n) for n in (1000, 2000, 4000)]
    return {
        "prefill": ", ".join(f"{e:+.0f}%" for e in prefill[:2]) + f" and {prefill[2]:+.0f}%",
        "balanced": f"{error('sglang', 'prefill', True, True):+.0f}% at 4K",
        "decode": f"{error('sglang', 'decode', True, False):+.1f}% with two-batch overlap and "
        f"{error('sglang', 'decode', False, False):+.1f}% without",
        "h800": f"prefill profile {error('deepseek', 'prefill', True, True):+.0f}%",
    }


# --- recent engines under load (test_calibration.py -k engine_profiles) ---------------------


@functools.cache
def _engine_errors(prefill_first: bool | None) -> list:
    """Every engine figure against the catalog's profiles (`None`: as they are; a bool: with
    `Efficiency.prefill_first` set so), as test_engine_profiles_report replays them."""
    from calibration.engine_errors import catalog_efficiency, row_errors
    from calibration.engines import EngineData, all_at_once, load_engine_data

    def efficiency(engine, gpu, precision):
        profile = catalog_efficiency(engine, gpu, precision)
        if prefill_first is None:
            return profile
        return profile.model_copy(update={"prefill_first": prefill_first})

    data, _skipped = load_engine_data()
    loaded = [r for r in data.runs if r.run.concurrency >= 16 and not all_at_once(r)]
    # only the runs the group reads are replayed (the report replays every row)
    return row_errors(EngineData(loaded, [], data.versions), efficiency, medians=True)


def _under_load(errors: list, figure: str, held_out_only: bool = False) -> list:
    """The report's "recent engines under load" group: closed-loop runs at 16 users or
    more that do not send every request at once."""
    return [
        e
        for e in errors
        if e.kind == "closed-loop"
        and e.concurrency >= 16
        and not e.all_at_once
        and e.figure == figure
        and (e.held_out or not held_out_only)
    ]


ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "trtllm": "TensorRT-LLM"}
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
FIGURES = ("tpot_mean_ms", "output_tokens_per_s", "ttft_mean_ms", "ttft_median_ms")


def _four(errors: list, held_out_only: bool) -> list[str]:
    return [
        _pct(_median_abs([e.error_pct for e in _under_load(errors, f, held_out_only)]))
        for f in FIGURES
    ]


@check("engines-under-load", ENGINES)
def _engines_under_load(run: Runner) -> dict[str, str]:
    after, mixed = _engine_errors(None), _engine_errors(False)
    engines = sorted(
        {ENGINE_NAMES[e.engine.split("-")[0]] for e in _under_load(after, "ttft_mean_ms")}
    )
    tpot, tokens, ttft, median = _four(after, False)
    held = _four(after, True)
    runs, held_runs = (len(_under_load(after, "ttft_mean_ms", h)) for h in (False, True))
    medians, held_medians = (len(_under_load(after, "ttft_median_ms", h)) for h in (False, True))
    means = [e.error_pct for e in _under_load(after, "ttft_mean_ms")]
    signed_mean = float(np.median(means))
    signed_median = float(np.median([e.error_pct for e in _under_load(after, "ttft_median_ms")]))
    wild = sorted(e for e in means if e > 100)
    return {
        "engines": f"{' and '.join(engines)} closed-loop runs at 16 users",
        "tpot": f"mean TPOT {tpot}",
        "tokens": f"tokens/s {tokens}",
        "ttft": f"mean TTFT {ttft}",
        "median": f"median TTFT {median} on all {runs} runs ({medians} print a median)",
        "held": f"{', '.join(held[:3])} and {held[3]} on the {held_runs} held out ({held_medians}",
        "mixed": f"{', '.join(_four(mixed, False)[:3])} and {_four(mixed, False)[3]}",
        "signed": f"the means read {-signed_mean:.0f}% low and the medians "
        f"{signed_median:.0f}% high",
        "wild": f"{WORDS.get(len(wild), len(wild))} runs read {wild[0]:+.0f}% to {wild[-1]:+.0f}%",
    }


@check("wide-ep-overlap", WIDE_EP)
def _wide_ep_overlap(run: Runner) -> dict[str, str]:
    """Two-batch overlap on the wide-EP rows: the decode row with and without it, the
    model's gain at 256 and 32 sequences a GPU, and its prefill gain at the blog's 8,192
    tokens a GPU (calibration.wide_ep.prefill_overlap_gain_pct, as the tool prints it)."""
    from dataclasses import replace

    from calibration.wide_ep import (
        error_pct,
        load_wide_ep_rows,
        predict_wide_ep,
        prefill_overlap_gain_pct,
    )

    rows = [row for row in load_wide_ep_rows() if row.engine == "sglang"]
    (on, off) = (
        next(r for r in rows if r.phase == "decode" and r.two_batch_overlap == tbo)
        for tbo in (True, False)
    )

    def gain(sequences: float) -> float:
        at = replace(on, sequences_per_gpu=sequences)
        with_it = predict_wide_ep(at)
        return (with_it / predict_wide_ep(replace(at, two_batch_overlap=False)) - 1) * 100

    prefill = [
        prefill_overlap_gain_pct(row)
        for row in rows
        if row.phase == "prefill" and not row.balanced_routing
    ]
    return {
        "decode": f"{error_pct(predict_wide_ep(on), on.measured):+.1f}% with it and "
        f"{error_pct(predict_wide_ep(off), off.measured):+.1f}%",
        "gain256": f"256 sequences a GPU is {gain(256):.0f}%",
        "gain32": f"the model {gain(32):+.0f}%",
        "prefill": ", ".join(f"{g:.0f}%" for g in prefill[:2]) + f" and {prefill[2]:.0f}%",
    }


# --- SGLang's memory split by device (calibration/sglang_defaults.py) -----------------------


def _share(fraction: float) -> str:
    return _pct(100 * fraction)


@check("sglang-memory", "calibration/sglang_defaults.py")
def _sglang_memory(run: Runner) -> dict[str, str]:
    """SGLang's prefill chunk and memory reserve by device at its defaults."""
    from calibration.sglang_defaults import sglang_defaults
    from models.physics.catalog import gpu

    def at(name: str, tp: int = 1) -> dict[str, float]:
        return sglang_defaults(gpu(name).hbm_gib, tp)

    h100, a100, h200, b200 = (at(g) for g in ("h100-sxm", "a100-80gb-sxm", "h200", "b200"))
    assert h100 == a100, "the README quotes the H100 and the A100 80GB as one"
    tp8 = at("h100-sxm", 8)["memory_reserve_fraction"]
    return {
        "h100": f"{h100['prefill_chunk_tokens']:,.0f} tokens and "
        f"{_share(h100['memory_reserve_fraction'])} on an H100",
        "h200": f"{_share(h200['memory_reserve_fraction'])} on an H200",
        "b200": f"{b200['prefill_chunk_tokens']:,.0f} tokens and "
        f"{_share(b200['memory_reserve_fraction'])} on a B200",
        "tp8": f"{_share(tp8 - h100['memory_reserve_fraction'])} of an H100 more: {_share(tp8)}",
    }


@check("moe-limits", BENCH)
def _moe_limits(run: Runner) -> dict[str, str]:
    """The MoE held-out medians "What it does not model yet" quotes (moe_report)."""
    held = _moe()["held out"]
    return {
        "all": f"within {_pct(held['all MoE rows'].median_abs_pct)} (median, held out",
        "deepseek": f"DeepSeek-R1 {_pct(held['model deepseek-r1'].median_abs_pct)}",
        "rtx": f"({_pct(held['DEP on rtx-pro-6000'].median_abs_pct)} median on the held-out rows)",
    }


@functools.cache
def _minimax_errors() -> dict[tuple[str, str, int, int, str], float]:
    """MiniMax-M2.5's closed-loop figures (SGLang's EP8 runs and vLLM's InferenceX runs)
    against the catalog's profiles, keyed (engine family, GPU, TP, users, figure) at the
    1,000-token prompts (the 8K runs apart)."""
    from calibration.engine_errors import catalog_efficiency, row_errors
    from calibration.engines import EngineData, load_engine_data

    data, _skipped = load_engine_data()
    runs = [r for r in data.runs if r.run.model == "minimax-m2.5" and r.run.prompt_tokens < 1500]
    errors = row_errors(EngineData(runs, [], data.versions), catalog_efficiency)
    return {
        (e.engine.split("-")[0], e.gpu, int(e.layout[2]), e.concurrency, e.figure): e.error_pct
        for e in errors
    }


@check("minimax-ep", ENGINES)
def _minimax_ep(run: Runner) -> dict[str, str]:
    errors = _minimax_errors()

    def tpot(engine: str, gpu: str, tp: int, users: int) -> str:
        return f"{errors[(engine, gpu, tp, users, 'tpot_mean_ms')]:+.1f}%"

    return {
        "h100": f"{tpot('sglang', 'h100-sxm', 8, 1)} at one user on 8 H100",
        "b200": f"{tpot('sglang', 'b200', 8, 1)} on 8 B200, {tpot('sglang', 'b200', 8, 100)} at "
        "100 users",
        "h100_load": f"{tpot('sglang', 'h100-sxm', 8, 100)} at 100 users on H100",
        "vllm": f"{tpot('vllm', 'h100-sxm', 8, 4)} at TP8 x EP8 and "
        f"{tpot('vllm', 'h100-sxm', 4, 4)} at TP4 x EP4",
    }


# --- decode step and stalls apart (python -m calibration.engine_diagnosis) -----------------

DIAGNOSIS = "python -m calibration.engine_diagnosis"


@functools.cache
def _stall_splits() -> dict[tuple[str, str, int, int, int], object]:
    """The runs that print a median ITL, split into decode step and stalls, keyed (model,
    GPU, concurrency, prompt scale, output scale: 1 for the 1,000-token lengths, 8 for the
    8,000-token ones)."""
    from calibration.engine_diagnosis import stall_splits
    from calibration.engines import load_engine_data

    data, _skipped = load_engine_data()
    out = {}
    for s in stall_splits(data):
        m = s.run.run
        scales = tuple(1 + 7 * (tokens > 1500) for tokens in (m.prompt_tokens, m.output_tokens))
        out[(m.model, m.gpu, m.concurrency, *scales)] = s
    return out


@check("stall-split", DIAGNOSIS)
def _stall_split(run: Runner) -> dict[str, str]:
    splits = _stall_splits()

    def split(model: str, gpu: str, users: int = 100) -> object:
        return splits[(model, gpu, users, 1, 1)]

    def both(model: str, gpu: str) -> str:
        s = split(model, gpu)
        return (
            f"{s.itl_error_pct:+.1f}% and {s.predicted_stall_ms:.2f} against "
            f"{s.measured_stall_ms:.2f}"
        )

    b200 = split("minimax-m2.5", "b200")
    short = [s for key, s in splits.items() if key[3] == 1 and key[2] >= 16]
    more = [s for s in short if s.measured_stall_ms > s.predicted_stall_ms]
    qwen, deepseek = split("qwen3-235b-a22b", "b200"), split("deepseek-r1", "b200")
    same = [
        f"{split('minimax-m2.5', gpu, users).measured_itl_ms:.2f}"
        for users in (100, 16)
        for gpu in ("b200", "h100-sxm")
    ]
    # at 16 users each request decodes while the 15 others are prefilled about once each,
    # one prefill iteration apiece: the stall's shortfall per token x output tokens / 15
    sixteen = [s for key, s in splits.items() if key[2:] == (16, 1, 1)]
    per_prefill = sorted(
        (s.measured_stall_ms - s.predicted_stall_ms) * s.run.run.output_tokens / 15 for s in sixteen
    )
    return {
        "b200": f"{b200.itl_error_pct:+.1f}% on its decode step ({b200.predicted_itl_ms:.2f} "
        f"against {b200.measured_itl_ms:.2f} ms) and {b200.predicted_stall_ms:.2f} against "
        f"{b200.measured_stall_ms:.2f} ms of stalls",
        "h100": both("minimax-m2.5", "h100-sxm"),
        "scout": both("llama-4-scout", "mi300x"),
        "maverick": both("llama-4-maverick", "mi300x"),
        "same": f"{same[0]} and {same[1]} ms at 100 users, {same[2]} and {same[3]} at 16",
        "fitted": f"Qwen3-235B {qwen.itl_error_pct:+.1f}%, DeepSeek-R1 "
        f"{deepseek.itl_error_pct:+.1f}%",
        "fitted_stalls": f"{qwen.predicted_stall_ms:.2f} against {qwen.measured_stall_ms:.2f} "
        f"ms, {deepseek.predicted_stall_ms:.2f} against {deepseek.measured_stall_ms:.2f}",
        "more": f"{len(more)} of the {len(short)} runs",
        "per_prefill": f"{per_prefill[0]:.0f} to {per_prefill[-1]:.0f} ms over the "
        f"{len(sixteen)} runs at 16 users",
    }
