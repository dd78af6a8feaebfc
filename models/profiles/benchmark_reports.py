"""Where each benchmark tool's JSON report holds each figure, read for `fleetplan calibrate`.

`vllm bench serve --save-result`, genai-perf and aiperf, and `trtllm-bench --report_json`
each write the run's figures under their own keys: `vllm_fields`, `genai_perf_fields` and
`trtllm_fields` pull them out under the CSV's column names (models.profiles.measurements),
and `VLLM_KEYS`, `GENAI_PERF_KEYS`, `TRTLLM_KEYS` say where each came from, so that a
refused figure is named as the file names it. A genai-perf/aiperf record that cannot be
read (not a mapping, a unit that is not a time or tokens/s, a mean that is no number) is a
problem named by its key. The checks of the figures themselves are the CSV's
(models.profiles.measurements).
"""

import math
from typing import Any

_TIME_UNITS = {"s": 1e3, "sec": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
"""Milliseconds per unit of a latency figure."""

VLLM_KEYS = {
    "model": "model_id", "isl": "total_input_tokens / completed",
    "osl": "total_output_tokens / completed", "concurrency": "max_concurrency",
    "num_requests": "completed", "output_tok_s": "output_throughput",
    "ttft_mean_ms": "mean_ttft_ms", "tpot_mean_ms": "mean_tpot_ms",
}  # fmt: skip
GENAI_PERF_KEYS = {
    "isl": "input_sequence_length.avg", "osl": "output_sequence_length.avg",
    "concurrency": "input_config: concurrency", "num_requests": "request_count.avg",
    "output_tok_s": "output_token_throughput.avg", "ttft_mean_ms": "time_to_first_token.avg",
    "tpot_mean_ms": "inter_token_latency.avg",
}  # fmt: skip
TRTLLM_KEYS = {
    "model": "engine.model", "tp": "world_info.tp_size", "pp": "world_info.pp_size",
    "isl": "dataset.avg_isl", "osl": "dataset.avg_osl", "concurrency": "world_info.concurrency",
    "num_requests": "dataset.num_requests",
    "output_tok_s": "performance.system_output_throughput_tok_s",
    "ttft_mean_ms": "streaming_metrics.avg_ttft_ms",
    "tpot_mean_ms": "streaming_metrics.avg_tpot_ms",
}  # fmt: skip
"""Where each format's file holds each figure (`vllm_fields`, `genai_perf_fields`,
`trtllm_fields`): a refused figure is named so (`completed (num_requests): -1 must be
...`), where it was named by the CSV column alone, a key the file does not hold."""


def shown(value: Any) -> str:
    """A value for a message, cut: an integer of 400 digits is named by its size."""
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _get(document: dict, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _per_request(total: Any, count: Any) -> float | None:
    try:
        return float(total) / float(count)
    except OverflowError:  # a total of 400 digits: past every bound, reported so
        return math.inf
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def vllm_fields(document: dict) -> dict[str, Any]:
    completed = document.get("completed")
    concurrency = document.get("max_concurrency")
    if concurrency is None and str(document.get("request_rate")).lower() == "inf":
        concurrency = completed  # every request at once
    elif _whole(concurrency) and _whole(completed) and concurrency > completed > 0:
        concurrency = completed  # --max-concurrency caps what is in flight: the prompts
    return {
        "model": document.get("model_id"),
        "isl": _per_request(document.get("total_input_tokens"), completed),
        "osl": _per_request(document.get("total_output_tokens"), completed),
        "concurrency": concurrency,
        "num_requests": completed,
        "output_tok_s": document.get("output_throughput"),
        "ttft_mean_ms": document.get("mean_ttft_ms"),
        "tpot_mean_ms": document.get("mean_tpot_ms"),
    }


def _whole(value: Any) -> bool:
    """Whether `value` is an integer of JSON (never `true`)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _ms(document: dict, key: str, problems: list[tuple[str, str]]) -> float | None:
    """A genai-perf/aiperf latency record's mean in ms (its `unit` honoured); None when
    the record or its mean is absent. A record that cannot be read (not a mapping, a
    unit that is not a time, a mean that is not a number) is a problem named by its
    field: each was read as absent, and the fit went on without the figure."""
    metric = _record(document, key, problems)
    if metric is None or metric.get("avg") is None:
        return None
    unit = metric.get("unit", "ms")
    scale = _TIME_UNITS.get(str(unit).lower())
    if scale is None:
        units = ", ".join(_TIME_UNITS)
        problems.append((f"{key}.unit", f"{shown(unit)} is not a time unit ({units})"))
        return None
    mean = _mean(metric, key, problems)
    return None if mean is None else mean * scale


def _record(document: dict, key: str, problems: list[tuple[str, str]]) -> dict | None:
    """The genai-perf/aiperf record `key` (None where absent); one that is not a mapping is
    a problem named by its key, read as absent."""
    metric = document.get(key)
    if metric is not None and not isinstance(metric, dict):
        problems.append((key, f"{shown(metric)} is not a record of a unit and an avg"))
        return None
    return metric


def _avg(document: dict, key: str, problems: list[tuple[str, str]]) -> Any:
    """A record's `avg` as written (None where absent); a record that is no mapping is a
    problem (`request_count: [80]` was read as absent: 10 x the concurrency)."""
    metric = _record(document, key, problems)
    return None if metric is None else metric.get("avg")


def _mean(metric: dict, key: str, problems: list[tuple[str, str]]) -> float | None:
    """A record's `avg` as a number (a string of one read as written); a value that is
    none (a boolean, a word, a list) is a problem named `KEY.avg`."""
    value = metric.get("avg")
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        return float(value)
    except OverflowError:  # an integer of 400 digits: past every bound, reported so
        return math.inf
    except (TypeError, ValueError):
        problems.append((f"{key}.avg", f"{shown(value)} is not a number"))
        return None


_THROUGHPUT_UNITS = ("tokens/sec", "tokens/s", "tok/s")
"""How genai-perf and aiperf write an output throughput's unit (none written: tokens/s)."""


def _tokens_per_s(document: dict, problems: list[tuple[str, str]]) -> float | None:
    """The output throughput's mean in tokens/s: a unit other than per second (tokens/min
    was read as per second, 60x the run's rate) or a record that is not one is a problem."""
    key = "output_token_throughput"
    metric = _record(document, key, problems)
    if metric is None:
        return None
    unit = metric.get("unit", "tokens/sec")
    if str(unit).lower() not in _THROUGHPUT_UNITS:
        problems.append((f"{key}.unit", f"{shown(unit)} is not tokens/sec"))
        return None
    return None if metric.get("avg") is None else _mean(metric, key, problems)


def _find(document: Any, key: str) -> Any:
    """The first value of `key` anywhere in a nested configuration."""
    if isinstance(document, dict):
        if key in document and not isinstance(document[key], dict | list):
            return document[key]
        for value in document.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def genai_perf_fields(document: dict, problems: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "isl": _avg(document, "input_sequence_length", problems),
        "osl": _avg(document, "output_sequence_length", problems),
        "concurrency": _find(document.get("input_config"), "concurrency"),
        "num_requests": _avg(document, "request_count", problems),
        "output_tok_s": _tokens_per_s(document, problems),
        "ttft_mean_ms": _ms(document, "time_to_first_token", problems),
        "tpot_mean_ms": _ms(document, "inter_token_latency", problems),
    }


def trtllm_fields(document: dict) -> dict[str, Any]:
    requests = _get(document, "dataset", "num_requests") or _get(
        document, "request_info", "num_requests"
    )
    return {
        "model": _get(document, "engine", "model"),
        "tp": _get(document, "world_info", "tp_size"),
        "pp": _get(document, "world_info", "pp_size"),
        "isl": _get(document, "dataset", "avg_isl")
        or _get(document, "request_info", "avg_input_length"),
        "osl": _get(document, "dataset", "avg_osl")
        or _get(document, "request_info", "avg_output_length"),
        "concurrency": _get(document, "world_info", "concurrency"),
        "num_requests": requests,
        "output_tok_s": _get(document, "performance", "system_output_throughput_tok_s"),
        "ttft_mean_ms": _get(document, "streaming_metrics", "avg_ttft_ms"),
        "tpot_mean_ms": _get(document, "streaming_metrics", "avg_tpot_ms"),
    }
