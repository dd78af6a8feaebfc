"""Measurements of one's own engine, read for `fleetplan calibrate`.

Four formats, each a closed-loop benchmark run (C requests in flight; a run that sends
every request at once is C = its request count):

- a CSV with one run per line and these columns (a header line first; the three metrics
  are each optional, at least one per line):
    model, gpu, precision, tp        the replica: catalog names, weight precision, TP
    pp, kv_precision                 optional: 1 and the weight precision
    isl, osl                         mean prompt (new tokens) and output tokens
    concurrency                      requests in flight
    num_requests                     optional: 10 x concurrency
    output_tok_s                     output tokens/s of the replica
    ttft_mean_ms, tpot_mean_ms       mean time to first token, mean time per output token
- the JSON `vllm bench serve --save-result` writes (`max_concurrency`, `completed`,
  `total_input_tokens`, `total_output_tokens`, `output_throughput`, `mean_ttft_ms`,
  `mean_tpot_ms`);
- the JSON genai-perf and aiperf export (`time_to_first_token`, `inter_token_latency`,
  `output_token_throughput`, `input_sequence_length`, `output_sequence_length`, each with
  `avg` and `unit`; the concurrency from `input_config`);
- the JSON `trtllm-bench --report_json` writes (`performance`, `streaming_metrics`,
  `dataset` or `request_info`, `world_info`).
The JSON formats do not say which GPU, layout or catalog model ran: `RunDefaults` (the
command's flags) fill what a file leaves out. Every file is read through the bounded
reader (`models.io.documents`); every problem names the file, line and column.
"""

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Any

from models.io.documents import read_document, read_text
from models.io.numbers import is_decimal
from models.physics.catalog import closest_name, gpu_catalog, llm_catalog
from models.physics.precision import Precision
from models.profiles.benchmark_reports import (
    GENAI_PERF_KEYS,
    TRTLLM_KEYS,
    VLLM_KEYS,
    genai_perf_fields,
    shown,
    trtllm_fields,
    vllm_fields,
)
from models.schema import limits
from models.schema.errors import InputError, Issue
from models.schema.quantities import out_of_range

DEFAULT_REQUESTS_PER_USER = 10
"""`num_requests` when a CSV line leaves it out: 10 x the concurrency (a common
`--num-prompts`)."""
MAX_MEASUREMENTS = 10_000
"""More lines than any calibration needs; past it the file is refused."""


@dataclass(frozen=True)
class Measurement:
    """One benchmark run of one replica."""

    source: str
    """Where it was read: `runs.csv:3` or `bench.json`."""
    model: str
    gpu: str
    precision: Precision
    kv_precision: Precision
    tp: int
    pp: int
    prompt_tokens: float
    """Mean new prompt tokens per request."""
    output_tokens: float
    concurrency: int
    requests: int
    output_tokens_per_s: float | None
    ttft_mean_ms: float | None
    tpot_mean_ms: float | None
    ep: int = 1
    """Expert-parallel ranks the routed experts were split over (`--ep`; 1: the experts
    split by TP as the attention is)."""
    keys: tuple[tuple[str, str], ...] = ()
    """(column, the file's key) of a JSON result (`VLLM_KEYS`, ...): a figure a later
    check refuses is named as the file names it (`named`)."""

    def named(self, column: str) -> str:
        """`column` as a message names it: `mean_ttft_ms (ttft_mean_ms)` for a JSON file."""
        key = dict(self.keys).get(column)
        return f"{key} ({column})" if key else column


@dataclass(frozen=True)
class RunDefaults:
    """What a JSON result does not say (the command's `--model`, `--gpu`, ... flags)."""

    model: str | None = None
    gpu: str | None = None
    precision: str | None = None
    kv_precision: str | None = None
    tp: int | None = None
    pp: int | None = None
    concurrency: int | None = None


def read_measurements(paths: list[Path], defaults: RunDefaults) -> list[Measurement]:
    """Every run in `paths` (CSV or JSON by suffix). Raises InputError listing every
    problem of every file."""
    runs: list[Measurement] = []
    issues: list[Issue] = []
    twice = sorted({str(p) for p in paths if paths.count(p) > 1})
    if twice:  # each of its runs would be fitted twice
        raise InputError(
            [Issue(name, None, "", "given twice: give each file once") for name in twice]
        )
    for path in paths:
        try:
            if path.suffix.lower() == ".csv":
                runs += _read_csv(path)
            else:
                runs.append(_read_json(path, defaults))
        except InputError as error:
            issues += error.issues
    issues += _repeated(runs)
    if issues:
        raise InputError(issues)
    if not runs:
        raise InputError([Issue(", ".join(map(str, paths)), None, "", "no measurement in it")])
    return runs


def _repeated(runs: list[Measurement]) -> list[Issue]:
    """A run given twice, every field alike (a row pasted twice, one JSON result passed
    twice): the fit counted its errors twice and leave-one-out still saw it when leaving
    it out. Two runs of one shape with their own figures are repeats, and are kept."""
    first: dict[tuple, str] = {}
    issues = []
    for run in runs:
        key = astuple(replace(run, source="", keys=()))
        if key in first:
            message = f"the same run as {first[key]} (every field alike): give each run once"
            issues.append(Issue(run.source, None, "", message))
        first.setdefault(key, run.source)
    return issues


class _Row:
    """One record's fields, checked one by one; problems collected, not raised."""

    def __init__(self, where: str, line: int | None, fields: dict[str, Any]):
        self.where, self.line, self.fields = where, line, fields
        self.issues: list[Issue] = []

    def problem(self, field: str, message: str) -> None:
        self.issues.append(Issue(self.where, self.line, field, message))

    def number(self, field: str, required: bool = True, whole: bool = False) -> float | None:
        value = self.fields.get(field)
        if value is None or value == "":
            if required:
                self.problem(field, "missing")
            return None
        if isinstance(value, bool) or (isinstance(value, str) and not is_decimal(value)):
            self.problem(field, f"{value!r} is not a number")  # `1_6`, Arabic-Indic digits
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.problem(field, f"{value!r} is not a number")
            return None
        except OverflowError:  # a JSON integer of 400 digits
            self.problem(field, f"{shown(value)} must be below 1e12")
            return None
        if not math.isfinite(number) or number <= 0 or number > 1e12:
            self.problem(field, f"{value!r} must be a finite number above 0 (and below 1e12)")
            return None
        if whole and number != int(number):
            self.problem(field, f"{value!r} must be a whole number")
            return None
        return number

    def tokens(self, field: str) -> float | None:
        """A mean length of whole-token requests: at least 1 (an osl of 1e-300 was read,
        and the run refused for a throughput it then could not reach, naming that)."""
        value = self.number(field)
        if value is not None and value < 1:
            self.problem(field, f"{value:g} tokens: a request holds at least 1 token")
            return None
        return value

    def degree(self, field: str, value: float | None) -> float | None:
        """A parallel degree within the layout bound `--tp` and an instance hold it to
        (limits.PARALLEL_DEGREE): tp 99999999999 passed the row's 1e12, was warned of
        ('does not divide the 32 attention heads'), left out, and the fit ran on the
        other rows for two minutes (exit 0)."""
        why = None if value is None else out_of_range(value, limits.PARALLEL_DEGREE)
        if why:
            self.problem(field, why)
            return None
        return value

    def name(self, field: str, known: dict[str, Any]) -> str | None:
        value = self.fields.get(field)
        if value is None or value == "":
            self.problem(field, "missing (for a JSON result, give it as a flag)")
            return None
        if str(value) not in known:
            close = closest_name(str(value), list(known))
            guess = f"; did you mean {close!r}?" if close else " (fleetplan catalog)"
            self.problem(field, f"{value!r} is not in the catalog{guess}")
            return None
        return str(value)

    def precision(self, field: str, default: Precision | None) -> Precision | None:
        value = self.fields.get(field)
        if value is None or value == "":
            if default is None:
                self.problem(field, "missing")
            return default
        try:
            return Precision(str(value).lower())
        except ValueError:
            choices = ", ".join(p.value for p in Precision)
            self.problem(field, f"{value!r} is not a precision ({choices})")
            return None

    def measurement(self) -> Measurement | None:
        model = self.name("model", llm_catalog())
        gpu = self.name("gpu", gpu_catalog())
        precision = self.precision("precision", None)
        kv = self.precision("kv_precision", precision)
        tp = self.degree("tp", self.number("tp", whole=True))
        pp = self.degree("pp", self.number("pp", required=False, whole=True)) or 1
        isl, osl = self.tokens("isl"), self.tokens("osl")
        concurrency = self.number("concurrency", whole=True)
        requests = self.number("num_requests", required=False, whole=True)
        tok_s = self.number("output_tok_s", required=False)
        ttft = self.number("ttft_mean_ms", required=False)
        tpot = self.number("tpot_mean_ms", required=False)
        if tok_s is None and ttft is None and tpot is None and not self.issues:
            self.problem(
                "output_tok_s", "no metric: give output_tok_s, ttft_mean_ms or tpot_mean_ms"
            )
        if requests is not None and concurrency is not None and concurrency > requests:
            self.problem(  # the replay started that many users (one request each)
                "concurrency",
                f"{concurrency:g} users is more than the run's {requests:g} requests "
                "(num_requests): at most that many were ever in flight; give the run's own",
            )
        if self.issues:
            return None
        assert model and gpu and precision and kv and tp and isl and osl and concurrency
        return Measurement(
            source=f"{self.where}:{self.line}" if self.line else self.where,
            model=model,
            gpu=gpu,
            precision=precision,
            kv_precision=kv,
            tp=int(tp),
            pp=int(pp),
            prompt_tokens=isl,
            output_tokens=osl,
            concurrency=int(concurrency),
            requests=int(requests or DEFAULT_REQUESTS_PER_USER * concurrency),
            output_tokens_per_s=tok_s,
            ttft_mean_ms=ttft,
            tpot_mean_ms=tpot,
        )


CSV_COLUMNS = (
    "model", "gpu", "precision", "tp", "pp", "kv_precision", "isl", "osl", "concurrency",
    "num_requests", "output_tok_s", "ttft_mean_ms", "tpot_mean_ms",
)  # fmt: skip
"""The CSV's columns (the module's list); a header of any other name is refused."""


def _unknown_column(name: str) -> str:
    """'ttft_mean (ms)': not a column; did you mean 'ttft_mean_ms'? ...: a column the
    reader does not know was skipped, so a metric under another spelling (a unit in the
    header, another case) was never fitted and the run fitted on the others."""
    close = closest_name(name, list(CSV_COLUMNS), cutoff=0.5)
    guess = f"; did you mean {close!r}?" if close else ""
    if ";" in name or "\t" in name:
        guess = "; columns are separated by commas"
    return (
        f"is not a column of a measurements CSV{guess} (its values would be ignored; the "
        f"units are in the names: {', '.join(CSV_COLUMNS)})"
    )


def _read_csv(path: Path) -> list[Measurement]:
    text = read_text(path, "measurements")
    # newline="": csv splits lines as universal newlines do (a CSV saved with CR endings
    # alone was an internal error) and keeps a line break inside a quoted field
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames
    except csv.Error as error:  # a header past csv's 128 KiB field limit
        raise InputError([Issue(str(path), 1, "", f"CSV: {error}")]) from None
    if not header:
        raise InputError([Issue(str(path), 1, "", "no header line")])
    names = [name.strip() for name in header]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # csv keeps the last column of a name: the first would be lost unseen
        raise InputError([Issue(str(path), 1, name, "column given twice in the header")
                          for name in twice])  # fmt: skip
    unknown = [name for name in names if name and name not in CSV_COLUMNS]
    if unknown:  # its values would be dropped unseen: a metric or a layout lost
        raise InputError([Issue(str(path), 1, name, _unknown_column(name)) for name in unknown])
    runs, issues = [], []
    for index, fields in enumerate(_rows(reader, path)):
        if index >= MAX_MEASUREMENTS:
            issues.append(Issue(str(path), None, "", f"more than {MAX_MEASUREMENTS:,} lines"))
            break
        if None in fields:
            issues.append(Issue(str(path), reader.line_num, "", "more values than columns"))
            continue
        short = [name.strip() for name, value in fields.items() if value is None]
        if short:  # csv fills the columns a short row lacks with None (exit 70 before)
            message = f"fewer values than columns (none for {', '.join(short)})"
            issues.append(Issue(str(path), reader.line_num, "", message))
            continue
        row = _Row(str(path), reader.line_num, {k.strip(): v.strip() for k, v in fields.items()})
        run = row.measurement()
        issues += row.issues
        if run is not None:
            runs.append(run)
    if issues:
        raise InputError(issues)
    return runs


def _rows(reader: csv.DictReader, path: Path) -> Iterator[dict[str, Any]]:
    """The reader's rows; a line csv refuses (a field past its 128 KiB limit, a NUL)
    raises InputError naming the line (csv.Error reached the user as exit 70)."""
    try:
        yield from reader
    except csv.Error as error:
        raise InputError([Issue(str(path), reader.line_num + 1, "", f"CSV: {error}")]) from None


def _read_json(path: Path, defaults: RunDefaults) -> Measurement:
    document, _ = read_document(path, "measurements")
    if not isinstance(document, dict):
        raise InputError([Issue(str(path), None, "", "not a JSON object of a benchmark result")])
    if "mean_ttft_ms" in document or "output_throughput" in document:
        fields, keys = vllm_fields(document), VLLM_KEYS
    elif "performance" in document:  # a list there was 'not a result of ... trtllm-bench'
        fields, keys = trtllm_fields(document), TRTLLM_KEYS
        sections = (
            "performance",
            "world_info",
            "dataset",
            "request_info",
            "streaming_metrics",
            "engine",
        )
        unread = [  # one of another shape was read as absent: the flags filled its figures
            (key, f"{shown(document[key])} is not a section of trtllm-bench's report")
            for key in sections
            if document.get(key) is not None and not isinstance(document[key], dict)
        ]
        if unread:
            raise InputError([Issue(str(path), None, key, why) for key, why in unread])
    elif isinstance(document.get("time_to_first_token"), dict) or isinstance(
        document.get("output_token_throughput"), dict
    ):
        unread: list[tuple[str, str]] = []
        fields, keys = genai_perf_fields(document, unread), GENAI_PERF_KEYS
        if unread:
            raise InputError([Issue(str(path), None, key, why) for key, why in unread])
    else:
        raise InputError(
            [
                Issue(
                    str(path),
                    None,
                    "",
                    "not a result of vllm bench serve, genai-perf, aiperf or trtllm-bench "
                    "(see `fleetplan calibrate --help` for the CSV columns)",
                )
            ]
        )
    filled = {
        "model": defaults.model,
        "gpu": defaults.gpu,
        "precision": defaults.precision,
        "kv_precision": defaults.kv_precision,
        "tp": defaults.tp,
        "pp": defaults.pp,
        "concurrency": defaults.concurrency,
    }
    clashes = []
    for key, value in fields.items():  # what the file records wins; the flags fill gaps
        if value is None or (key == "model" and str(value) not in llm_catalog()):
            continue  # (a Hugging Face id: the --model flag names the catalog model)
        flag = filled.get(key)
        if flag is not None and flag != value and str(flag) != str(value):
            clashes.append(  # the flag was dropped without a word (--concurrency 8, file 1)
                Issue(
                    str(path),
                    None,
                    key,
                    f"the file records {shown(value)}, --{key.replace('_', '-')} says "
                    f"{shown(flag)}: the file's value is the run's; drop the flag",
                )
            )
        filled[key] = value
    if filled["concurrency"] is None and isinstance(document.get("performance"), dict):
        filled["concurrency"] = fields.get("num_requests")  # max throughput: all queued at once
    row = _Row(str(path), None, filled)
    run = row.measurement()
    if run is None:  # named as the file names it where the file gave it (or none did)
        raise InputError(  # before any clash: a value the file cannot hold is no clash
            [
                replace(issue, path=f"{keys[issue.path]} ({issue.path})")
                if issue.path in keys
                and (fields.get(issue.path) is not None or filled.get(issue.path) is None)
                else issue
                for issue in row.issues
            ]
        )
    if clashes:
        raise InputError(clashes)
    return replace(run, keys=tuple(keys.items()))
