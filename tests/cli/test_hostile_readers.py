"""Hostile input, round three (issue 36), the readers and the numbers: a `--set` value is
held to the limits of a file (no alias bomb), goldens and sweep results are read bounded
(a FIFO is never waited on, bytes that are not text never crash), an hourly weight near
10^308 is refused, and a boolean is never read as a number, in an instance or a plan.
Each case runs through the command line and exits with a message naming the field."""

import json
import os

import pytest
import yaml

from models.schema import reading_limits
from tests.cli.test_hostile_input import run_checked
from tests.guards import failing_after
from tests.paths import ONE_MODEL_ONE_REGION

BASE = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite when a command runs past 30 s."""
    with failing_after(30, "the command"):
        yield


def _instance(tmp_path, data, name="inst.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _changed(path: tuple, value) -> dict:
    data = json.loads(json.dumps(BASE))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return data


# --- a boolean is not a number ----------------------------------------------------------

SUPPLY = ("regions", 0, "supply", "h100-sxm")
DEMAND = ("workloads", 0, "demand", "us-east")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ((*SUPPLY, "max_gpus"), "max_gpus"),  # `max_gpus: yes` offered one GPU
        ((*SUPPLY, "price_per_gpu_hour"), "price_per_gpu_hour"),
        ((*DEMAND, "peak_requests_per_s"), "peak_requests_per_s"),
        (("workloads", 0, "slo", "ttft_p99_ms"), "ttft_p99_ms"),
    ],
)
def test_a_boolean_is_not_a_number_in_an_instance(run_cli, tmp_path, path, field):
    source = _instance(tmp_path, _changed(path, True))
    run_checked(run_cli, "validate", source, needles=(field, "a boolean is not a number"))


@pytest.mark.parametrize(
    ("written", "said"),
    [("yes", "must be a number, got the text 'yes'"),  # YAML 1.2: a word (1.1's true)
     ("true", "must be a number, got true (a boolean is not a number)")],
)  # fmt: skip
def test_yes_in_yaml_is_not_one_gpu(run_cli, tmp_path, written, said):
    text = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")
    source = tmp_path / "yes.yaml"
    source.write_text(text.replace("max_gpus: 64", f"max_gpus: {written}"), encoding="utf-8")
    run_checked(run_cli, "validate", source, needles=(f"max_gpus: {said}",))


def test_a_boolean_replica_count_in_a_plan_is_refused(run_cli, tmp_path):
    pool = {
        "workload": "chat",
        "region": "us-east",
        "gpu": "h100-sxm",
        "precision": "fp8",
        "tp": 1,
        "pp": 1,
        "count": True,
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replicas": [pool]}), encoding="utf-8")
    run_checked(
        run_cli,
        "verify",
        ONE_MODEL_ONE_REGION,
        plan,
        needles=("count", "a boolean is not a number"),
    )


# --- hourly weights ---------------------------------------------------------------------


@pytest.mark.parametrize("weight", [1e308, 1e16])
def test_an_hourly_weight_beyond_the_bound_is_refused(run_cli, tmp_path, weight):
    """24 x 1e308 is infinite: the normalised profile (w x 24 / sum w) had an infinite
    hour and `solve` exited 70; 10^16 is past the bound (10^15) too."""
    profile = [1.0] * 24
    profile[12] = weight
    source = _instance(tmp_path, _changed((*DEMAND, "hourly_profile"), profile))
    run_checked(run_cli, "validate", source, needles=("hourly_profile", "at most"))


# --- --set values held to the limits of a file -------------------------------------------


def test_an_alias_bomb_in_a_set_value_is_refused_before_it_is_built(
    run_cli, monkeypatch, hang_guard
):
    """Nine levels of nine aliases are 9^9 (~3.9 x 10^8) values once expanded: refused
    at MAX_DOCUMENT_NODES (lowered to 1,000 here, so the old reader's answer, a type
    error about the name, cannot pass for the limit's)."""
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_NODES", 1_000)
    levels = ["&a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        levels.append(f"&a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    bomb = "[" + ", ".join(levels) + "]"
    run_checked(
        run_cli,
        "validate",
        ONE_MODEL_ONE_REGION,
        "--set",
        f"name={bomb}",
        needles=("--set", "name", "alias bomb", "MAX_DOCUMENT_NODES"),
    )


# --- goldens and sweep results ----------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_golden_is_a_regression_not_a_hang(run_cli, tmp_path, hang_guard):
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "one.yaml").write_text(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    os.mkfifo(folder / "one.expected.json")  # nothing ever writes to it
    result = run_checked(run_cli, "batch", folder, "--check", "--jobs", "1", code=1)
    assert "bad golden file" in result.stdout + result.stderr
    assert "FIFO" in result.stdout + result.stderr


def test_binary_lines_of_a_results_file_are_solved_again_not_a_crash(run_cli, tmp_path):
    # a file whose first line is binary is not the sweep's and is refused
    # (test_hostile_round14); past a first record, lines that are not text are damage
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"instance: {ONE_MODEL_ONE_REGION}\n"
        "axes:\n  workloads[chat].demand.us-east.peak_requests_per_s: [10, 20]\n",
        encoding="utf-8",
    )
    results = tmp_path / "results.jsonl"
    first = b'{"point": 9, "key": "no point of this grid", "status": "error"}\n'
    results.write_bytes(first + bytes(range(256)) * 4 + b"\n\xff\xfe{not json\n")
    result = run_checked(run_cli, "sweep", grid, "--out", str(results), code=0)
    records = [json.loads(line) for line in results.read_bytes().splitlines()[-2:]]
    assert len({r["key"] for r in records}) == 2, result.stderr  # both points solved anew


# --- names reach the terminal shown, never obeyed ---------------------------------------

ESCAPES = "\x1b]0;retitled\x07\x1b[2J\x1b[31m\x9b31m\u202e"
"""A title change, a screen clear, a colour (7-bit and C1 CSI) and a bidi override."""


def _obeyable(text: str) -> list[str]:
    """Characters in `text` that a terminal would act on (tab and newline are fine)."""
    return [
        c
        for c in text
        if (ord(c) < 32 and c not in "\t\n")
        or 0x7F <= ord(c) <= 0x9F
        or 0x202A <= ord(c) <= 0x202E
        or 0x2066 <= ord(c) <= 0x2069
    ]


@pytest.mark.parametrize(
    "command",
    [("validate",), ("solve",), ("solve", "--markdown", "-")],
)
def test_escape_sequences_in_names_are_shown_not_obeyed(run_cli, tmp_path, command):
    data = _changed(("name",), f"evil{ESCAPES}")
    data["workloads"][0]["name"] = f"chat{ESCAPES}"
    source = _instance(tmp_path, data, "escapes.json")
    source.write_text(json.dumps(data), encoding="utf-8")  # JSON keeps every character
    result = run_cli(command[0], source, *command[1:])
    assert "Traceback" not in result.stdout + result.stderr
    assert _obeyable(result.stdout + result.stderr) == []
    assert "evil\\u001b]0;retitled" in result.stdout + result.stderr  # shown, spelled out
