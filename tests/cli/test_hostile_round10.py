"""Hostile input, round ten: fleet rows, grids and runs that were read as something
else. Each case below exited 0 with a wrong or misleading answer, or named a field the
user never wrote; each now exits 2 naming the file, the row and the column."""

import json
import shutil

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_side_files import FLEET_HEADER, _fleet_args
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION

# --- fleet-import: rows ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "message"),
    [
        # the replicas cell left empty: read 'count: Input should be a valid integer'
        ("chat,us-east,h100-sxm,fp8,1,1,", "row 2: replicas is empty"),
        # a short row: csv fills the missing cells with None, read 'count: ...'
        (
            "chat,us-east,h100-sxm,fp8,1,1",
            "row 2: fewer values than the header has columns (none for replicas)",
        ),
        # an empty tp cell: read 'tp: Field required' beside a header that has it
        ("chat,us-east,h100-sxm,fp8,,1,2", "row 2: tp is empty"),
        # negative replicas: read 'count: Input should be greater than or equal to 0'
        (
            "chat,us-east,h100-sxm,fp8,1,1,-2",
            "row 2: replicas: Input should be greater than or equal to 0",
        ),
    ],
    ids=["empty-replicas", "short-row", "empty-tp", "negative-replicas"],
)
def test_a_fleet_row_names_the_column_it_lacks(run_cli, tmp_path, row, message):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER}\n{row}\n")
    out = tmp_path / "out.yaml"
    result = run_checked(run_cli, *_fleet_args(fleet, out), needles=(str(fleet), message))
    assert "count" not in result.stderr and not out.exists()


def test_a_fleet_of_a_workload_the_instance_lacks_is_refused(run_cli, tmp_path):
    """A typo'd workload ('chta') imported with exit 0: its 2 GPUs raised `existing` to
    4 and only verify, run later, named it; the regions were already checked."""
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(
        f"{FLEET_HEADER}\nchat,us-east,h100-sxm,fp8,1,1,2\nchta,us-east,h100-sxm,fp8,1,1,2\n"
    )
    out = tmp_path / "out.yaml"
    needles = (
        str(fleet),
        "the fleet serves workloads the instance lacks: 'chta' (instance workloads: 'chat')",
    )
    run_checked(run_cli, *_fleet_args(fleet, out), needles=needles)
    assert not out.exists()


# --- calibrate: units -------------------------------------------------------------------


def test_runs_whose_latencies_are_in_seconds_write_no_profile(run_cli, tmp_path):
    """TTFT 0.15 and TPOT 0.012 (seconds, in the ms columns): the fit pinned every factor
    at its bound, printed a median error of 24,578% and wrote the profile with exit 0. An
    8B bf16 decode step reads 16.06 GB of weights, at 95% of an H100's 3.35 TB/s at
    least 16.06 / (3.35 x 0.95) = 5.0 ms: 0.012 ms is 400x below what any fit can
    reach, past the 3x a units mistake is read at."""
    runs = tmp_path / "runs.csv"
    header = "model,gpu,precision,tp,isl,osl,concurrency,num_requests,output_tok_s," + (
        "ttft_mean_ms,tpot_mean_ms"
    )
    rows = ["2000,64,1,100,60,0.150,0.012", "256,256,1,100,80,0.020,0.011"]
    runs.write_text(
        header + "".join(f"\nllama-3.1-8b,h100-sxm,bf16,1,{row}" for row in rows) + "\n"
    )
    profile = tmp_path / "p.yaml"
    needles = (
        f"{runs}:2: tpot_mean_ms: 0.012 ms is",
        f"{runs}:3: ttft_mean_ms",
        "no profile was written",
    )
    result = run_checked(run_cli, "calibrate", runs, "-o", profile, needles=needles)
    assert f"{runs}:2: output_tok_s" not in result.stderr  # 60 tokens/s is a plausible rate
    assert not profile.exists()


def test_a_latency_far_past_a_units_mistake_states_its_ratio_in_a_few_digits(run_cli, tmp_path):
    """TPOT 1e-300 ms: the ratio to the 5.0 ms floor above is 5.0 / 1e-300 = 5e+300,
    which read as 301 digits with thousands commas; now in three significant digits."""
    runs = tmp_path / "runs.csv"
    runs.write_text(
        "model,gpu,precision,tp,isl,osl,concurrency,num_requests,tpot_mean_ms\n"
        "llama-3.1-8b,h100-sxm,bf16,1,2000,64,1,100,1e-300\n"
    )
    result = run_checked(run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml",
                         needles=(f"{runs}:2: tpot_mean_ms: 1e-300 ms is 5",))  # fmt: skip
    ratio = result.stderr.split("ms is ", 1)[1].split("x below", 1)[0]
    assert len(ratio) <= 8 and "e+300" in ratio, ratio


# --- estimate: floors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "key", "value", "floor"),
    [
        # L = lambda W = 92.6 x 1e-300 = 0 in flight: 0.0 GPUs by concurrency, exit 0
        ("--latency-s", "latency_s", "1e-300", "must be at least 0.001 s"),
        # 0 requests/s at peak: 'ceil(0.0) + 1 spare' = one GPU, exit 0
        ("--requests-per-day", "requests_per_day", "0.5", "must be at least 1 requests/day"),
    ],
)
def test_an_estimate_assumption_below_its_floor_is_refused(
    run_cli, tmp_path, flag, key, value, floor
):
    run_checked(run_cli, "estimate", flag, value, needles=(f"{flag}: {floor}, got {value}",))
    config = tmp_path / "assumptions.yaml"
    config.write_text(f"{key}: {value}\n")
    run_checked(run_cli, "estimate", "--config", config, needles=(f"{config}:1: {key}: {floor}",))


# --- instance: the shape of a link ------------------------------------------------------


@pytest.mark.parametrize(
    "link",
    ["{from: us-east, to: eu-west, rtt_ms: 80}", "[us-east, eu-west, 80, 5]", "us-east"],
    ids=["mapping", "four-items", "bare-name"],
)
def test_a_link_of_the_wrong_shape_says_what_a_link_is(run_cli, tmp_path, link):
    """A link written as a mapping read 'Input should be a valid tuple', four items
    'Tuple should have at most 3 items after validation': neither says what a link is."""
    instance = tmp_path / "inst.yaml"
    text = ONE_MODEL_ONE_REGION.read_text()
    instance.write_text(text + f"links:\n  - {link}\n")
    line = text.count("\n") + 2
    needles = (f"{instance}:{line}: links[0]: a link is a list [region, region, round-trip ms]",)
    run_checked(run_cli, "validate", instance, needles=needles)


def test_a_run_given_twice_is_refused_naming_both_lines(run_cli, tmp_path):
    """A row pasted twice: the fit counted its errors twice, and leaving it out still left
    its copy in (exit 0). Two runs of one shape with their own figures are repeats, kept."""
    runs = tmp_path / "runs.csv"
    header = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s,ttft_mean_ms,tpot_mean_ms"
    row = "llama-3.1-8b,h100-sxm,bf16,1,2000,64,1,60,150,12"
    runs.write_text(f"{header}\n{row}\n{row}\n")
    profile = tmp_path / "p.yaml"
    needles = (f"{runs}:3: the same run as {runs}:2 (every field alike)",)
    run_checked(run_cli, "calibrate", runs, "-o", profile, needles=needles)
    run_checked(run_cli, "calibrate", runs, runs, "-o", profile, needles=(f"{runs}: given twice",))
    assert not profile.exists()


# --- deploy: a folder an earlier deploy wrote -------------------------------------------


def test_deploy_refuses_a_folder_holding_an_earlier_plans_pool(run_cli, tmp_path):
    """A plan of east and west deployed to k8s/, then a plan of east alone to the same
    folder: west's Deployment stayed beside east's, exit 0, and fleet-import of the
    folder read it back as 1 GPU owned in west (kubectl apply -f would run it)."""
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "inst.yaml")
    plan = tmp_path / "plan.json"
    pool = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8",
            "tp": 1, "pp": 1, "count": 2, "gpus": 2}  # fmt: skip
    plan.write_text(json.dumps({"replicas": [pool]}))
    out = tmp_path / "k8s"
    out.mkdir()
    earlier = out / "chat-us-west-h100-sxm-fp8-tp1pp1-unified.yaml"
    earlier.write_text("---\nkind: Deployment\n")
    (out / "notes.txt").write_text("mine\n")  # not a kind deploy writes: left alone
    args = ("deploy", plan, "--instance", tmp_path / "inst.yaml", "--target", "k8s", "-o", out)
    needles = (f"{earlier}: is not among the 1 file this deploy writes",)
    run_checked(run_cli, *args, needles=needles)
    assert sorted(path.name for path in out.iterdir()) == [earlier.name, "notes.txt"]
    earlier.unlink()
    run_checked(run_cli, *args, code=0)  # the folder holding its own files again: fine
    run_checked(run_cli, *args, code=0)
    # the plan and the instance deployed beside themselves: inputs, not an earlier pool
    beside = ("deploy", plan, "--instance", tmp_path / "inst.yaml", "--target", "k8s")
    run_checked(run_cli, *beside, "-o", tmp_path, code=0)


# --- instance: names that print alike ---------------------------------------------------


@pytest.mark.parametrize("twin", ["us-east\u200b", "us-east ", "\ufeffus-east"])
def test_two_regions_that_print_alike_are_refused(run_cli, tmp_path, twin):
    """'us-east' and 'us-east' + a zero-width space validated as two regions, each
    planned and reported under a name no table tells apart from the other's."""
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text())
    data["regions"].append({**data["regions"][0], "name": twin})
    data["workloads"][0]["demand"][twin] = {"peak_requests_per_s": 5}
    instance = tmp_path / "inst.yaml"
    instance.write_text(yaml.safe_dump(data, sort_keys=False))
    needles = (f"regions[1].name: {twin!r} prints as 'us-east' does",)
    run_checked(run_cli, "validate", instance, needles=needles)


# --- perf: a target the role does not hold ----------------------------------------------


def test_a_tpot_target_on_a_prefill_replica_is_refused(run_cli):
    """--role prefill --tpot-p99-ms 0.001 (no server makes a token in a microsecond)
    printed the prefill capacity without the target and echoed it in the JSON, exit 0."""
    args = ("perf", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-i", "1000", "-o", "200")
    needles = ("--tpot-p99-ms: a prefill replica makes the first token only",)
    run_checked(run_cli, *args, "--role", "prefill", "--tpot-p99-ms", "0.001", needles=needles)
    run_checked(run_cli, *args, "--role", "prefill", "--ttft-p99-ms", "500", code=0)
    # the outputs' spread: the same JSON with and without it, exit 0
    needles = ("--output-p99-tokens: a prefill replica makes the first token only",)
    run_checked(run_cli, *args, "--role", "prefill", "--output-p99-tokens", "1000", needles=needles)


# --- batch: a golden file that does not validate ----------------------------------------


def test_a_bad_golden_is_named_field_by_field(run_cli, tmp_path):
    """A golden without its status read pydantic's dump: '1 validation error for Golden /
    status / Field required [type=missing, input_value={}, ...] / For further information
    visit https://errors.pydantic.dev/...', over five lines of the table and of stderr."""
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "a.yaml")
    golden = tmp_path / "a.expected.json"
    golden.write_text('{\n  "cost_per_month": "lots"\n}\n')
    result = run_checked(run_cli, "batch", tmp_path, "--check", code=1)
    said = result.stdout + result.stderr
    assert f"bad golden file: {golden}:1: status: required field is missing" in said
    assert f"{golden}:2: cost_per_month: must be a number, got the text 'lots'" in said
    assert "errors.pydantic.dev" not in said and "validation error for" not in said


# --- voice: the first clause -------------------------------------------------------------


def test_a_first_clause_past_a_spoken_one_is_refused_on_both_paths(run_cli, tmp_path):
    """--first-clause-tokens 100,000 left (1 - 0.5) x 700 ms / 100,000 = 0.0035 ms per
    token and printed 'TPOT p99 0.00 ms' with exit 0; an instance took up to 10^8."""
    args = ("voice", "--first-audio-ms", "800", "--endpointing-ms", "100")
    needles = ("--first-clause-tokens: must be at most 100 tokens, got 100,000",)
    run_checked(run_cli, *args, "--first-clause-tokens", "100000", needles=needles)
    # the most it takes: (1 - 0.5) x 700 / 100 = 3.50 ms per token
    assert (
        "TPOT p99 3.50 ms"
        in run_checked(run_cli, *args, "--first-clause-tokens", "100", code=0).stdout
    )
    change = "workloads[0].voice.first_clause_tokens=1000"
    needles = ("workloads[0].voice.first_clause_tokens: must be at most 100 tokens",)
    run_checked(
        run_cli, "validate", INSTANCES / "voice-agent.yaml", "--set", change, needles=needles
    )


# --- --set: a key holding a dot ----------------------------------------------------------


def test_a_region_whose_name_holds_a_dot_can_be_set(run_cli, tmp_path):
    """A region named eu.west could not be reached by --set: demand.eu.west.peak... read
    'unknown key west' under a demand 'eu' it made up, and demand[eu.west] 'is a mapping,
    not a list'. In brackets a mapping's key may hold a dot."""
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text().replace("us-east", "eu.west"))
    change = "workloads[chat].demand[eu.west].peak_requests_per_s=5"
    result = run_checked(run_cli, "validate", instance, "--set", change, code=0)
    assert "5.0 peak requests/s in all" in result.stdout
    change = "workloads[chat].demand[eu.east].peak_requests_per_s=5"
    run_checked(
        run_cli, "validate", instance, "--set", change, needles=("unknown region 'eu.east'",)
    )


def test_a_flag_the_result_file_contradicts_is_refused(run_cli, tmp_path):
    """A vllm bench serve result of one user with --concurrency 8: the file's 1 won and
    the flag was dropped without a word (exit 0)."""
    result = tmp_path / "bench.json"
    result.write_text(json.dumps({
        "max_concurrency": 1, "completed": 10, "total_input_tokens": 20_000,
        "total_output_tokens": 640, "output_throughput": 50.0, "mean_ttft_ms": 150.0,
        "mean_tpot_ms": 10.0,
    }))  # fmt: skip
    flags = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    args = ("calibrate", result, "-o", tmp_path / "p.yaml", *flags, "--no-leave-one-out")
    needles = (f"{result}: concurrency: the file records 1, --concurrency says 8",)
    run_checked(run_cli, *args, "--concurrency", "8", needles=needles)
    run_checked(run_cli, *args, "--concurrency", "1", code=0)  # agreeing: fine


# --- report: the output's kind ------------------------------------------------------------


def test_report_writes_html_only_to_an_html_file(run_cli, tmp_path):
    """report -o other-plan.json replaced the user's plan with HTML, exit 0."""
    mine = tmp_path / "other-plan.json"
    mine.write_text('{"replicas": []}')
    needles = ("--output", f"{mine}: the report is HTML; give a file ending in .html")
    run_checked(run_cli, "report", ONE_MODEL_ONE_REGION, "-o", mine, needles=needles)
    assert mine.read_text() == '{"replicas": []}'


# --- estimate: assumptions the performance model replaces --------------------------------


def test_an_assumption_the_performance_model_replaces_is_refused(run_cli, tmp_path):
    """--target-utilization 0.5 with --ttft-p99-ms 500 printed 'target utilisation at peak
    100%' (the capacity at the target holds the margin), and --seqs-per-gpu and
    --latency-s beside --model were replaced by the model's operating point: the same
    JSON as without them, exit 0."""
    model = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    needles = ("--target-utilization: is replaced by 1",)
    run_checked(run_cli, *model, "--ttft-p99-ms", "500", "--target-utilization", "0.5",
                needles=needles)  # fmt: skip
    needles = ("--latency-s: is replaced by", "--seqs-per-gpu: is replaced by")
    run_checked(run_cli, *model, "--latency-s", "3", "--seqs-per-gpu", "10", needles=needles)
    config = tmp_path / "assumptions.yaml"
    config.write_text("seqs-per-gpu: 10\n")
    needles = (f"{config}:1: seqs_per_gpu: is replaced by",)
    run_checked(run_cli, *model, "--config", config, needles=needles)
    # without a target the utilisation is the planner's own: kept
    run_checked(run_cli, *model, "--target-utilization", "0.5", code=0)
    run_checked(run_cli, "estimate", "--config", config, code=0)  # no --model: its own
