"""Hostile input, round sixteen: numbers in quotes, a thread warning said twice, and an
input error whose message was lost with the pipe its reader closed. Each case was a
value read two ways by two spellings, a warning printed twice or an error said nowhere."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_round15 import _into_closed_pipe
from tests.paths import ONE_MODEL_ONE_REGION, REPO

TEXT = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")

# --- one rule for numbers: a number in quotes is text --------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "shown"),
    [
        ("max_gpus: 64", 'max_gpus: "64"', "regions[0].supply.h100-sxm.max_gpus", "'64'"),
        ("price_per_gpu_hour: 2.4", "price_per_gpu_hour: '2.4'",
         "regions[0].supply.h100-sxm.price_per_gpu_hour", "'2.4'"),
        ("peak_requests_per_s: 20", 'peak_requests_per_s: "2e1"',
         "workloads[0].demand.us-east.peak_requests_per_s", "'2e1'"),
        ("ttft_p99_ms: 800", 'ttft_p99_ms: " 800"', "workloads[0].slo.ttft_p99_ms", "' 800'"),
    ],
    ids=["int", "float", "exponent", "spaces"],
)  # fmt: skip
def test_a_number_in_quotes_is_text_and_refused(run_cli, tmp_path, old, new, field, shown):
    """`max_gpus: "64"` offered 64 GPUs (pydantic's lax mode reads text as a number) while
    an unquoted `1e2` (text in YAML 1.1) was refused as 'unable to parse string as an
    integer': a value in quotes is text, and a numeric field refuses it, showing it."""
    path = tmp_path / "quoted.yaml"
    path.write_text(TEXT.replace(old, new), encoding="utf-8")
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if new in text)
    needles = (f"{path}:{line}: {field}: must be a number, got the text {shown}",)
    run_checked(run_cli, "validate", path, needles=needles)


def test_a_number_in_quotes_in_json_is_refused(run_cli, tmp_path):
    """JSON says the same: `"max_gpus": "64"` is a string where the schema says integer."""
    from models.io.documents import read_document

    data, _ = read_document(ONE_MODEL_ONE_REGION)
    data["regions"][0]["supply"]["h100-sxm"]["max_gpus"] = "64"
    path = tmp_path / "quoted.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    needles = ("regions[0].supply.h100-sxm.max_gpus: must be a number, got the text '64'",)
    run_checked(run_cli, "validate", path, needles=needles)


@pytest.mark.parametrize(
    ("written", "value"),
    [("1e2", 100), ("6.4e1", 64), (".64e2", 64), ("1E2", 100), ("64.0", 64), ("64", 64)],
)
def test_an_unquoted_exponent_is_a_number(run_cli, tmp_path, written, value):
    """YAML 1.1 reads `1e2` and `6.4e1` (no point, or an exponent without a sign) as text,
    YAML 1.2 and JSON as numbers: unquoted, they are the numbers they spell (100 = 1 x 10^2
    GPUs, 64 = 6.4 x 10^1), as an editor's YAML 1.2 schema check reads them."""
    from models.io.loading import load_instance

    path = tmp_path / "exponent.yaml"
    path.write_text(TEXT.replace("max_gpus: 64", f"max_gpus: {written}"), encoding="utf-8")
    supply = load_instance(path).regions[0].supply["h100-sxm"]
    assert supply.max_gpus == value


def test_a_quoted_number_in_a_set_is_text_too(run_cli):
    """`--set` reads its value as YAML, so it follows the file's rule."""
    needles = ("workloads[0].slo.ttft_p99_ms: must be a number, got the text '800'",)
    run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", "workloads[chat].slo.ttft_p99_ms='800'",
        needles=needles,
    )  # fmt: skip
    unquoted = run_cli(
        "validate", ONE_MODEL_ONE_REGION, "--set", "workloads[chat].slo.ttft_p99_ms=8e2"
    )
    assert unquoted.exit_code == 0, unquoted.stderr


def test_an_estimate_configs_incidents_take_numbers_only(run_cli, tmp_path):
    """An estimate config's incidents and M/M/1 utilisations were plain floats: `burn_rate:
    true` priced a 1x incident and `hours: "2"` two hours without a word."""
    path = tmp_path / "assumptions.yaml"
    path.write_text('incidents:\n  - {burn_rate: true, hours: "2"}\nmm1_utilizations: ["0.5"]\n')
    needles = (
        "incidents.0.burn_rate: must be a number, got true",
        "incidents.0.hours: must be a number, got the text '2'",
        "mm1_utilizations.0: must be a number, got the text '0.5'",
    )
    result = run_checked(run_cli, "estimate", "--config", path)
    assert all(needle.split(": ", 1)[1] in result.stderr for needle in needles), result.stderr


def test_a_golden_takes_numbers_only(tmp_path):
    """A golden result edited by hand to `"total_gpus": "6"` or `true` was read as 6 or 1
    GPUs; it is refused naming the field, as a plan's counts are."""
    from models.schema.errors import InputError
    from solver.studies.batch import read_golden

    instance = tmp_path / "a.yaml"
    for value in ('"6"', "true"):
        (tmp_path / "a.expected.json").write_text(
            f'{{"status": "optimal", "total_gpus": {value}}}', encoding="utf-8"
        )
        with pytest.raises(InputError) as caught:
            read_golden(instance)
        assert "total_gpus: must be a number" in str(caught.value), str(caught.value)


# --- one warning for threads above the CPU count --------------------------------------------


@pytest.mark.parametrize("flag", ["8", "1"])
def test_threads_above_the_cpus_warn_once(run_cli, tmp_path, monkeypatch, flag):
    """`solve --threads 8` of an instance with `solver.threads: 64` on a 2-CPU machine
    warned twice, once for the field and once for the flag, though the flag replaces the
    field: the flag's warning alone (8 > 2), and none for --threads 1, under which the
    field's 'the solver runs 2 threads' was false (it runs 1)."""
    from models.schema import limits

    monkeypatch.setattr(limits, "max_threads", lambda: 2)
    path = tmp_path / "threads.yaml"
    path.write_text(TEXT.replace("\npolicy:", "\nsolver: {threads: 64}\npolicy:"), encoding="utf-8")
    result = run_cli("solve", path, "--threads", flag)
    assert result.exit_code == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "more than this machine" in line]
    expected = ["warning: --threads: 8 is more than this machine's 2 CPUs; the solver runs 2 "
                "threads"] if flag == "8" else []  # fmt: skip
    assert warned == expected, result.stderr


# --- an input error where the reader has gone ---------------------------------------------


@pytest.fixture
def bad_instance(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nworkloads: 3\n", encoding="utf-8")
    return path


def test_validate_json_of_a_bad_file_keeps_its_message_and_exit_code(bad_instance):
    """`validate bad.yaml --json | head -0`: the problems' JSON met the closed pipe, and the
    command exited 141 with nothing said. The input error's message goes to stderr and its
    exit code, 2, stays: the reader's going is no answer to 'is this file valid?'."""
    result = _into_closed_pipe("validate", bad_instance, "--json")
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert f"{bad_instance}:2: workloads: " in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["validate", "solve"])
def test_an_input_error_into_a_closed_pipe_keeps_its_exit_code(bad_instance, command):
    """`solve bad.yaml 2>&1 | head -1`: the message's first line met the closed pipe and
    the command exited 141, as a solve cut short does; a script reading the status saw no
    input error. It exits 2."""
    result = _into_closed_pipe(command, bad_instance, stderr_too=True)
    assert result.returncode == 2, result.returncode


def test_an_infeasible_solve_into_a_closed_pipe_keeps_its_exit_code():
    """`solve --json` of an infeasible instance whose reader has gone: its diagnosis is
    said on stderr and it exits 3 (infeasible), not 141. region-loss-3 with us-east's
    H100s cut to 3 (README: at most 120 of 180 requests/s servable)."""
    result = _into_closed_pipe(
        "solve", REPO / "instances" / "region-loss-3.yaml", "--json",
        "--set", "regions[us-east].supply.h100-sxm.max_gpus=3",
    )  # fmt: skip
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert "capacity[none,chat]" in result.stderr, result.stderr


# --- CSV files with old Mac line endings ----------------------------------------------------

FLEET = "workload,region,gpu,precision,tp,pp,replicas\rchat,us-east,h100-sxm,fp8,1,1,2\r"
RUNS = (
    "model,gpu,precision,tp,isl,osl,concurrency,num_requests,output_tok_s,ttft_mean_ms,"
    "tpot_mean_ms\rllama-3.1-8b,h100-sxm,bf16,1,100,10,1,10,50,,\r"
)


def test_a_fleet_csv_with_carriage_returns_only_is_read(run_cli, tmp_path):
    """A CSV saved with CR line endings (classic Mac, some spreadsheet exports) was an
    internal error, exit 70 ('new-line character seen in unquoted field'): csv reads its
    lines as Python's universal newlines split them, so the fleet's one pool of 2 TP1
    replicas imports as 2 x 1 = 2 H100s of existing fleet."""
    fleet = tmp_path / "fleet.csv"
    fleet.write_bytes(FLEET.encode())
    out = tmp_path / "with-fleet.yaml"
    result = run_cli("fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                     "--instance-out", out)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "existing:\n    h100-sxm: 2\n" in out.read_text()


def test_a_measurements_csv_with_carriage_returns_only_is_read(run_cli, tmp_path):
    """calibrate's measurements CSV alike (exit 70 before): with CR line endings it reads
    as the same file with LF ones, the same exit code and the same words."""
    said = []
    for ending in ("\r", "\n"):
        runs = tmp_path / "runs.csv"
        runs.write_bytes(RUNS.replace("\r", ending).encode())
        result = run_cli("calibrate", runs, "-o", tmp_path / "p.yaml", "--no-leave-one-out")
        said.append((result.exit_code, result.stdout, result.stderr))
    assert said[0] == said[1], said
    assert "internal error" not in said[0][2]


@pytest.mark.parametrize("command", ["fleet-import", "calibrate"])
def test_a_csv_header_past_the_field_limit_is_bad_input(run_cli, tmp_path, command):
    """A header line of 200,000 characters (one field past csv's 131,072) was read outside
    the guard on the rows: an internal error. It is named as the rows' are."""
    wide = tmp_path / "wide.csv"
    wide.write_text("a" * 200_000 + "\n", encoding="utf-8")
    args = {"fleet-import": ("--instance", ONE_MODEL_ONE_REGION, "--instance-out",
                             tmp_path / "o.yaml"),
            "calibrate": ("-o", tmp_path / "p.yaml")}[command]  # fmt: skip
    run_checked(run_cli, command, wide, *args, needles=("field larger than field limit",))


# --- a latency target that rounds to zero seconds -----------------------------------------


def test_headroom_refuses_a_ttft_target_that_is_zero_in_seconds(run_cli):
    """`headroom --ttft-p99-ms 5e-324` passed the flag's bound (greater than 0 ms) and was
    an internal error, exit 70: 5e-324 ms / 1,000 is 0.0 s, which the derivation refuses.
    The target has the prefill time's floor, a microsecond (0.001 ms)."""
    needles = ("--ttft-p99-ms: must be at least 0.001 ms, got 4.94066e-324",)
    result = run_checked(
        run_cli, "headroom", "--prefill-ms", "50", "--ttft-p99-ms", "5e-324", needles=needles
    )
    assert "internal error" not in result.stderr


def test_a_fleet_objects_refused_value_is_shown_once(run_cli, tmp_path):
    """A Deployment whose pool annotation says `"tp": "1"` read 'tp: must be a number, got
    the text '1': ... (got '1')', the value twice, and `replicas: true` 'got true (a
    boolean is not a number) (got True)': our own checks show the value already."""
    from solver.deploy.fleet_import import FleetImportError, _pool

    for fields, shown in (({"tp": "1"}, "'1'"), ({}, "true")):
        data = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm",
                "precision": "fp8", "tp": 1, "pp": 1, **fields}  # fmt: skip
        with pytest.raises(FleetImportError) as caught:
            _pool(data, True if shown == "true" else 1, "document 0")
        message = str(caught.value)
        assert f"got {'the text ' if shown != 'true' else ''}{shown}" in message, message
        assert "(got" not in message, message


def test_a_binary_csv_is_not_called_yaml_or_json(run_cli, tmp_path):
    """A measurements CSV holding a NUL byte was 'a binary file (NUL byte at offset 9), not
    YAML or JSON text': a CSV is neither; it is 'not text'."""
    runs = tmp_path / "runs.csv"
    runs.write_bytes(b"model,gpu\x00\n")
    needles = (f"{runs}:1: is a binary file (NUL byte at offset 9), not text",)
    result = run_checked(run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml", needles=needles)
    assert "YAML" not in result.stderr
