"""Hostile and broken input (issue 16, the input side): every case exits with a documented
code and a message that names the problem, never a traceback, never a hang, and never
touches the user's file.

The bombs are generated here, small: where a real bomb would be slow to write, the limit
is lowered with monkeypatch (the reader reads `models.schema.limits` at call time) and the file
is sized around it, so each test also shows where the limit falls, to the value.
"""

import json
import math
import os
import sys
from pathlib import Path

import pytest
import yaml

from models.schema import catalog_limits, limits, reading_limits
from tests.guards import failing_after
from tests.paths import DEFAULT_INSTANCE

GOOD = DEFAULT_INSTANCE.read_text()
GOOD_DATA = yaml.safe_load(GOOD)


def _line_of(text: str, needle: str, start: int = 0) -> int:
    """1-based line of the first line at or after `start` that contains `needle`."""
    rows = text.splitlines()
    return 1 + next(i for i in range(start, len(rows)) if needle in rows[i])


def run_checked(run_cli, *args, code: int | None = 2, needles: tuple[str, ...] = ()):
    """Run fleetplan; check the exit code (unless None), the messages, that there is no
    traceback, and that no input file changed."""
    files = [Path(a) for a in args if isinstance(a, Path) and Path(a).is_file()]
    before = {path: path.read_bytes() for path in files}
    result = run_cli(*args)
    assert code is None or result.exit_code == code, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in result.stderr, result.stderr
    for path, content in before.items():
        assert path.read_bytes() == content
    return result


@pytest.fixture
def no_hang():
    """Fail (instead of hanging the suite) when a read blocks for 10 s."""
    with failing_after(10, "a read of a non-regular file"):
        yield


# --- numbers: non-finite, absurd, unrepresentable --------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        ("peak_requests_per_s: 30", "peak_requests_per_s: .nan",
         "workloads[0].demand.eu-west.peak_requests_per_s", "must be a finite number, got nan"),
        ("h100-sxm: {max_gpus: 512, price_per_gpu_hour: 2.40}",
         "h100-sxm: {max_gpus: 512, price_per_gpu_hour: .inf}",
         "regions[0].supply.h100-sxm.price_per_gpu_hour", "must be a finite number, got inf"),
        ("peak_to_average: 4}", "peak_to_average: -.inf}",
         "workloads[0].demand.us-east.peak_to_average", "must be a finite number, got -inf"),
        ("prompt_tokens: {mean: 1500", "prompt_tokens: {mean: 1.0e+308",
         "workloads[0].prompt_tokens.mean", "must be at most 100,000,000 tokens, got 1e+308"),
        ("[us-east, us-west, 62]", "[us-east, us-west, .inf]", "links[0][2]",
         "must be a finite number, got inf"),
        ("max_failover_rtt_ms: 100", "max_failover_rtt_ms: 1.0e+300",
         "workloads[0].slo.max_failover_rtt_ms", "must be at most 10,000 ms"),
        ("time_limit_s: 60", "time_limit_s: .inf", "solver.time_limit_s",
         "must be a finite number, got inf"),
        ("ttft_p99_ms: 800", "ttft_p99_ms: 90000000", "workloads[0].slo.ttft_p99_ms",
         "must be at most 86,400,000 ms"),
        ("h100-sxm: {max_gpus: 512,", "h100-sxm: {max_gpus: 1" + "0" * 37 + ",",
         "regions[0].supply.h100-sxm.max_gpus",
         "must be at most 1,000,000 GPUs, got an integer of about 10^37"),
        ("  - name: b200\n", "  - name: b200\n    hbm_gib: .nan\n", "gpus[2].hbm_gib",
         "must be a finite number, got nan"),
        ("hours_per_month: 730", "hours_per_month: .nan", "policy.hours_per_month",
         "must be a finite number, got nan"),
    ],
)  # fmt: skip
def test_non_finite_and_absurd_numbers_exit_2_naming_field_and_bound(
    run_cli, tmp_path, old, new, field, needle
):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = tmp_path / "instance.yaml"
    path.write_text(text)
    line = _line_of(text, new.splitlines()[-1].strip())
    run_checked(run_cli, "validate", path, needles=(f"{path}:{line}: {field}: {needle}",))


def test_json_infinity_and_nan_are_refused(run_cli, tmp_path):
    data = json.loads(json.dumps(GOOD_DATA))
    data["workloads"][0]["demand"]["eu-west"]["peak_requests_per_s"] = math.inf
    data["regions"][1]["supply"]["h200"]["price_per_gpu_hour"] = math.nan
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(data, indent=1))  # writes the non-JSON literals Infinity, NaN
    assert "Infinity" in path.read_text() and "NaN" in path.read_text()
    run_checked(
        run_cli,
        "validate",
        path,
        needles=(
            "workloads[0].demand.eu-west.peak_requests_per_s: must be a finite number, got inf",
            "regions[1].supply.h200.price_per_gpu_hour: must be a finite number, got nan",
        ),
    )


def test_integer_of_5000_digits_is_refused_without_traceback(run_cli, tmp_path):
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD.replace("max_gpus: 512", "max_gpus: " + "9" * 5000))
    run_checked(
        run_cli, "validate", path, needles=(f"more than {sys.get_int_max_str_digits():,} digits",)
    )


def test_bound_itself_is_allowed_and_the_next_value_is_not(run_cli, tmp_path):
    top = limits.REQUEST_RATE.high  # 10,000,000 requests/s
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD.replace("peak_requests_per_s: 30", f"peak_requests_per_s: {top:.0f}"))
    run_checked(run_cli, "validate", path, code=0)
    path.write_text(GOOD.replace("peak_requests_per_s: 30", f"peak_requests_per_s: {top + 1:.0f}"))
    run_checked(run_cli, "validate", path, needles=("must be at most 10,000,000 requests/s",))


def test_bounds_agree_with_each_other():
    # a day at the highest rate: 10^7 requests/s x 86,400 s = 8.64e11 <= 10^12 requests/day
    assert limits.REQUEST_RATE.high * 86_400 <= limits.REQUESTS_PER_DAY.high
    # one link per pair of regions: 100 x 99 / 2
    assert limits.LINKS.count == 100 * 99 // 2 == 4_950
    # a TP or PP degree can fill the largest scale-up domain, no more
    assert limits.PARALLEL_DEGREE.high == catalog_limits.GPUS_PER_NODE.high


def test_threads_beyond_the_cpu_count_are_capped_with_a_warning(run_cli, tmp_path, monkeypatch):
    """An instance written for a 64-core machine is valid on a 2-core one: the solver runs
    min(64, 2) = 2 threads and the warning names the field; a count no machine has is
    refused (tests/cli/test_hostile_round15.py has the --threads flag)."""
    monkeypatch.setattr(limits, "max_threads", lambda: 2)
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD.replace("time_limit_s: 60", "time_limit_s: 60\n  threads: 64"))
    result = run_checked(run_cli, "validate", path, code=0)
    assert "solver.threads: 64 is more than this machine's 2 CPUs; the solver runs 2" in (
        result.stderr
    )
    path.write_text(GOOD.replace("time_limit_s: 60", "time_limit_s: 60\n  threads: 100000"))
    run_checked(run_cli, "validate", path, needles=("solver.threads: must be at most 1,024",))


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("nan", "--time-limit: must be a finite number, got nan"),
        ("inf", "--time-limit: must be a finite number, got inf"),
        ("1e9", "--time-limit: must be at most 86,400 s"),
    ],
)
def test_solver_flags_obey_the_instance_bounds(run_cli, value, needle):
    run_checked(run_cli, "solve", DEFAULT_INSTANCE, "--time-limit", value, needles=(needle,))


# --- list lengths ---------------------------------------------------------------------


def test_101_regions_fail_fast_naming_the_limit(run_cli, tmp_path):
    extra = "".join(f"  - name: r{i}\n" for i in range(limits.REGIONS.count - 2))  # 3 + 98
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD.replace("regions:\n", "regions:\n" + extra, 1))
    run_checked(
        run_cli, "validate", path, needles=("regions: has 101 entries; at most 100 regions",)
    )


def test_too_many_parallel_degrees(run_cli, tmp_path):
    degrees = ", ".join(["1"] * (limits.CHOICES.count + 1))
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD.replace("tensor_parallel: [1, 2, 4, 8]", f"tensor_parallel: [{degrees}]"))
    run_checked(run_cli, "validate", path, needles=("has 17 entries; at most 16 choices",))


def test_many_problems_are_counted_not_all_printed(run_cli, tmp_path, monkeypatch):
    monkeypatch.setattr(reading_limits, "MAX_ISSUES_REPORTED", 5)
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD + "".join(f"junk{i}: 1\n" for i in range(12)))
    result = run_checked(run_cli, "validate", path, needles=("... and 7 more problems",))
    assert result.stderr.count("unknown key") == 5


# --- reading: size, depth, aliases, file kinds, encodings -------------------------------


def _expanded_nodes(node: yaml.Node) -> int:
    """Values in a composed YAML graph with every alias expanded (recursive walk)."""
    if isinstance(node, yaml.MappingNode):
        return 1 + sum(_expanded_nodes(k) + _expanded_nodes(v) for k, v in node.value)
    if isinstance(node, yaml.SequenceNode):
        return 1 + sum(_expanded_nodes(child) for child in node.value)
    return 1


def test_alias_expansion_limit_falls_exactly_at_the_count(run_cli, tmp_path, monkeypatch):
    text = GOOD.replace("h100-sxm: {max_gpus: 512,", "h100-sxm: &h100 {max_gpus: 512,").replace(
        "      h100-sxm: {max_gpus: 256, price_per_gpu_hour: 2.60}", "      h100-sxm: *h100"
    )
    path = tmp_path / "instance.yaml"
    path.write_text(text)
    count = _expanded_nodes(yaml.compose(text))
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_NODES", count)
    run_checked(run_cli, "validate", path, code=0)
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_NODES", count - 1)
    run_checked(run_cli, "validate", path, needles=(f"more than {count - 1:,} values", "alias"))


def test_billion_laughs_is_refused_before_expanding(run_cli, tmp_path):
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    path = tmp_path / "laughs.yaml"  # 10^10 values once expanded, 570 bytes written
    path.write_text("\n".join(rows) + "\n")
    run_checked(run_cli, "validate", path, needles=("MAX_DOCUMENT_NODES", "alias bomb"))


def test_self_referring_alias_is_refused(run_cli, tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("name: &a [1, *a]\n")
    run_checked(run_cli, "validate", path, needles=(f"{path}:1: alias *a refers to a node",))


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_nesting_limit_falls_exactly_at_the_depth(run_cli, tmp_path, monkeypatch, suffix):
    depth = _depth(GOOD_DATA)  # instance > workloads > [0] > demand > us-east: 5
    assert depth == 5
    path = tmp_path / f"instance{suffix}"
    path.write_text(GOOD if suffix == ".yaml" else json.dumps(GOOD_DATA))
    monkeypatch.setattr(reading_limits, "MAX_NESTING_DEPTH", depth)
    run_checked(run_cli, "validate", path, code=0)
    monkeypatch.setattr(reading_limits, "MAX_NESTING_DEPTH", depth - 1)
    run_checked(run_cli, "validate", path, needles=(f"nesting deeper than {depth - 1} levels",))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep.yaml", "[" * 100_000 + "]" * 100_000),
        ("block.yaml", "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "x: 1\n"),
    ],
)
def test_recursion_bombs_are_refused(run_cli, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    run_checked(
        run_cli, "validate", path, needles=("nesting deeper than 32 levels", "MAX_NESTING_DEPTH")
    )


def test_size_limit_falls_exactly_at_the_byte_count(run_cli, tmp_path, monkeypatch):
    path = tmp_path / "instance.yaml"
    path.write_text(GOOD)
    size = path.stat().st_size
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_BYTES", size)
    run_checked(run_cli, "validate", path, code=0)
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_BYTES", size - 1)
    run_checked(
        run_cli, "validate", path, needles=(f"limited to {size - 1:,} bytes", "MAX_DOCUMENT_BYTES")
    )


def test_json_instance_of_junk_keys_is_held_to_the_value_count(run_cli, tmp_path, monkeypatch):
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_NODES", 1_000)
    path = tmp_path / "junk.json"
    path.write_text(json.dumps({**GOOD_DATA, **{f"junk{i}": i for i in range(1_000)}}))
    run_checked(run_cli, "validate", path, needles=("more than 1,000 values",))


def test_fifo_instance_and_plan_are_refused_without_blocking(run_cli, tmp_path, no_hang):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    run_checked(run_cli, "validate", fifo, needles=("is a FIFO (named pipe), not a regular file",))
    plan = tmp_path / "plan.json"
    os.mkfifo(plan)
    run_checked(run_cli, "verify", DEFAULT_INSTANCE, plan, needles=("is a FIFO",))


def test_directory_and_device_are_refused(run_cli, tmp_path):
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    run_checked(run_cli, "validate", folder, needles=("is a directory, not a regular file",))
    run_checked(run_cli, "verify", DEFAULT_INSTANCE, folder, needles=("is a directory",))
    run_checked(
        run_cli, "verify", DEFAULT_INSTANCE, Path(os.devnull), needles=("character device",)
    )


@pytest.mark.parametrize("command", ["validate", "verify"])
def test_binary_latin1_and_utf16_files_are_named_as_such(run_cli, tmp_path, command):
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(
        json.dumps({"name": "x"}, indent=1).replace("x", "caf\u00e9").encode("latin-1")
    )
    utf16 = tmp_path / "utf16.json"
    utf16.write_bytes(json.dumps({"name": "x"}).encode("utf-16"))

    def args(path: Path) -> tuple:
        return (command, path) if command == "validate" else (command, DEFAULT_INSTANCE, path)

    run_checked(run_cli, *args(binary), needles=("is a binary file (NUL byte at offset 8)",))
    run_checked(run_cli, *args(latin1), needles=(f"{latin1}:2: is not UTF-8 text: byte 0xe9",))
    run_checked(run_cli, *args(utf16), needles=("is UTF-16 text; save it as UTF-8",))


# --- duplicate keys -------------------------------------------------------------------


def test_yaml_duplicate_gpu_under_one_region_names_both_lines(run_cli, tmp_path):
    first = "      h100-sxm: {max_gpus: 512, price_per_gpu_hour: 2.40}\n"
    text = GOOD.replace(first, first + "      h100-sxm: {max_gpus: 1, price_per_gpu_hour: 9.00}\n")
    path = tmp_path / "instance.yaml"
    path.write_text(text)
    line = _line_of(text, "h100-sxm: {max_gpus: 512")
    run_checked(
        run_cli,
        "validate",
        path,
        needles=(f"duplicate key 'h100-sxm' (first on line {line}, again on line {line + 1})",),
    )


def test_yaml_duplicate_top_level_name(run_cli, tmp_path):
    text = GOOD.replace("description:", "name: again\ndescription:")
    path = tmp_path / "instance.yaml"
    path.write_text(text)
    first, again = _line_of(text, "name: chat-70b"), _line_of(text, "name: again")
    run_checked(
        run_cli, "validate", path, needles=(f"(first on line {first}, again on line {again})",)
    )


def test_json_duplicate_names_both_lines_and_the_object(run_cli, tmp_path):
    text = json.dumps(GOOD_DATA, indent=1)
    supply = '"h100-sxm": {\n     "max_gpus": 512,'
    assert supply in text
    text = text.replace(supply, supply + '\n     "max_gpus": 5,', 1)
    path = tmp_path / "instance.json"
    path.write_text(text)
    first = _line_of(text, '"max_gpus": 512')
    run_checked(
        run_cli,
        "validate",
        path,
        needles=(
            f"{path}:{first + 1}: regions[0].supply.h100-sxm: duplicate key 'max_gpus' "
            f"(first on line {first}, again on line {first + 1})",
        ),
    )


def test_yaml_merge_keys_still_override(run_cli, tmp_path):
    text = GOOD.replace("h100-sxm: {max_gpus: 512,", "h100-sxm: &h100 {max_gpus: 512,").replace(
        "h100-sxm: {max_gpus: 256, price_per_gpu_hour: 2.60}",
        "h100-sxm: {<<: *h100, price_per_gpu_hour: 2.60}",
        1,
    )
    path = tmp_path / "instance.yaml"
    path.write_text(text)
    run_checked(run_cli, "validate", path, code=0)


# --- every command: no traceback, a bug exits 70 -------------------------------------


def test_unexpected_error_is_one_line_naming_a_bug_and_exits_70(run_cli, monkeypatch):
    def broken(path):
        raise ZeroDivisionError("division by zero in a place it should not be")

    monkeypatch.setattr("models.io.loading.load_instance", broken)
    result = run_checked(run_cli, "validate", DEFAULT_INSTANCE, code=70)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "bug in fleetplan" in lines[0]
    assert "ZeroDivisionError: division by zero in a place" in lines[0]


def test_recursion_error_from_input_exits_2(run_cli, monkeypatch):
    def exhausted(path):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("models.io.loading.load_instance", exhausted)
    run_checked(run_cli, "validate", DEFAULT_INSTANCE, needles=("too large or too deeply nested",))
