"""Hostile input, round eleven: plans edited by hand, names that print alike or as
nothing, and names written into the files people read. Each case below was read without
naming what was wrong, or accepted and shown as something else; each now names the field,
or shows the character instead of obeying it."""

import json

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}


# --- simulate: a plan of the wrong shape names its field -------------------------------


@pytest.mark.parametrize(
    ("plan", "needle"),
    [
        # before: 'PLAN: ... is not a plan written by `fleetplan solve --json`: 1 validation
        # error for Plan' (the first line of pydantic's text, naming no field)
        ({"replicas": [], "instance": 5},
         "instance: must be text, got 5: JSON reads an unquoted number as a number"),
        ({"replicas": [{**POOL, "tp": 1, "pp": 1, "count": -2}]},
         "replicas[0].count: Input should be greater than or equal to 0 (got -2)"),
    ],
    ids=["instance-a-number", "negative-count"],
)  # fmt: skip
def test_simulate_names_the_field_of_a_plan_it_cannot_read(run_cli, tmp_path, plan, needle):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    verified = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, needles=(needle,))
    result = run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, path, needles=(needle,))
    assert "validation error for Plan" not in result.stderr + verified.stderr


def test_an_instance_given_as_the_plan_is_named_as_an_instance(run_cli):
    """`verify instance.yaml instance.yaml` listed 14 fields a plan lacks (gpus.0.region:
    Field required, ...); the converse, a plan given as the instance, already said which
    way round the files go."""
    source = ONE_MODEL_ONE_REGION
    needles = (f"{source}:1: is an instance (it has workloads and no replicas), not a plan",)
    result = run_checked(run_cli, "verify", source, source, needles=needles)
    assert "Field required" not in result.stderr


# --- names that print alike, or as nothing ---------------------------------------------


def _with_workloads(tmp_path, *names: str):
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    first = data["workloads"][0]
    data["workloads"] = [{**first, "name": name} for name in names]
    path = tmp_path / "names.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("names", "needle"),
    [
        # 'café' composed (U+00E9) and decomposed (e + U+0301): two workloads that every
        # table, plan and manifest prints alike; both were planned, side by side
        (("caf\u00e9", "cafe\u0301"), "prints as 'café' does"),
        # a name of a space or a zero-width space: an empty cell in every table
        ((" ",), "prints as nothing"),
        (("\u200b",), "prints as nothing"),
    ],
    ids=["composed-and-decomposed", "space", "zero-width-space"],
)
def test_a_name_that_prints_alike_or_as_nothing_is_refused(run_cli, tmp_path, names, needle):
    path = _with_workloads(tmp_path, *names)
    field = f"workloads[{len(names) - 1}].name"
    run_checked(run_cli, "validate", path, needles=(field, needle))


def test_a_name_of_another_script_or_an_accent_alone_still_validates(run_cli, tmp_path):
    path = _with_workloads(tmp_path, "caf\u00e9", "\u0447\u0430\u0442")  # café, чат
    run_checked(run_cli, "validate", path, code=0)


# --- names written into the files people read ------------------------------------------

NAME = "a\x00b\u202egnp.exe"
"""A NUL (an HTML parse error) and a right-to-left override (shown 'abexe.png')."""


def test_the_html_report_shows_control_and_direction_characters_as_the_terminal_does():
    """The terminal showed `a\\u0000b\\u202egnp.exe`; report.html held the NUL 13 times
    (tables, headings and the charts' SVG) and the override reordered the name shown."""
    from cli.render.html_report import report_html
    from cli.render.tables import TableSpec
    from solver.plan.schema import Plan

    table = TableSpec(NAME, ("workload",), ((NAME,),), note=NAME)
    page = report_html([NAME, NAME], [table], Plan.model_validate({}), [], note=NAME)
    assert "\x00" not in page and "\u202e" not in page
    assert page.count("a\\u0000b\\u202egnp.exe") == 7  # title, h1, 2 notes, h3, caption, cell


def test_markdown_shows_control_and_direction_characters_as_the_terminal_does():
    from cli.render.tables import TableSpec, markdown_tables

    table = TableSpec(NAME, ("workload",), ((NAME,),), note=NAME)
    text = markdown_tables([NAME], [table], note=NAME)
    assert "\x00" not in text and "\u202e" not in text
    assert text.count("a\\u0000b\\u202egnp.exe") == 5  # title, section, cell, 2 notes


# --- calibrate: a run left out says why ------------------------------------------------


def test_a_run_the_replay_cannot_place_is_refused_with_the_replays_reason(run_cli, tmp_path):
    """A prompt of 10,000,000 tokens on llama-3.1-8b (a 131,072-token context) read 'the
    replay cannot run this layout (a precision the GPU lacks, a TP the model's heads
    cannot split, or weights beyond its memory)': none of the three, on bf16 TP 1."""
    from tests.cli.test_calibrate_unplaced import HEADER

    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER}\nllama-3.1-8b,h100-sxm,bf16,1,10000000,200,1,100,50,10\n")
    profile = tmp_path / "profile.yaml"
    needles = (
        f"{runs}:2: llama-3.1-8b on h100-sxm bf16 tp1 pp1: the replay cannot run this layout: ",
        "exceeds the 131,072-token context window of llama-3.1-8b",
    )
    result = run_checked(run_cli, "calibrate", runs, "-o", profile, "--no-leave-one-out",
                         needles=needles)  # fmt: skip
    assert "a precision the GPU lacks" not in result.stderr and not profile.exists()


# --- deploy: names that cannot be Kubernetes label values ------------------------------


def _one_region_named(tmp_path, region: str):
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["regions"][0]["name"] = region
    data["workloads"][0]["demand"] = {region: {"peak_requests_per_s": 20}}
    instance = tmp_path / "instance.yaml"
    instance.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    fleet = tmp_path / "fleet.json"
    pool = {**POOL, "region": region, "tp": 1, "pp": 1, "count": 1}
    fleet.write_text(json.dumps({"replicas": [pool]}))
    return instance, fleet


@pytest.mark.parametrize("target", ["k8s", "llm-d", "dynamo"])
@pytest.mark.parametrize("region", ["us/east", "eu-" + "w" * 61, "caf\u00e9"])
def test_a_region_no_node_label_can_hold_is_refused_by_the_manifest_targets(
    run_cli, tmp_path, target, region
):
    """A region 'us/east' was written as `topology.kubernetes.io/region: us/east` in every
    pod's nodeSelector, exit 0; the API server refuses such a label value, so `kubectl
    apply` failed on the whole folder (64 characters, an accent: the same)."""
    instance, fleet = _one_region_named(tmp_path, region)
    out = tmp_path / "out"
    needles = (f"region {region!r}", "topology.kubernetes.io/region", "63")
    run_checked(run_cli, "deploy", fleet, "--instance", instance, "--target", target, "-o",
                out, needles=needles)  # fmt: skip
    assert not out.exists()


def test_the_engine_targets_still_launch_such_a_region(run_cli, tmp_path):
    instance, fleet = _one_region_named(tmp_path, "us/east")
    out = tmp_path / "out"
    run_checked(run_cli, "deploy", fleet, "--instance", instance, "--target", "vllm", "-o", out,
                code=0)  # fmt: skip
    assert (out / "pools.json").exists()


# --- a target under a millisecond is said as written -----------------------------------


@pytest.mark.parametrize(("ttft_ms", "said"), [(0.4, "target 0.4 ms"), (1e-9, "target 1e-09 ms")])
def test_a_ttft_target_under_a_millisecond_is_not_read_back_as_zero(run_cli, ttft_ms, said):
    # before: 'p99 TTFT >= 40 ms on every configuration that fits (...); target 0 ms'
    change = f"workloads[chat].slo.ttft_p99_ms={ttft_ms}"
    result = run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, "--set", change, code=3,
                         needles=(said,))  # fmt: skip
    assert "target 0 ms" not in result.stderr


# --- a name that differs from a known one in case only ---------------------------------


def _instance_with(tmp_path, old: str, new: str):
    path = tmp_path / "case.yaml"
    text = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        # before: "unknown GPU 'H100-SXM' (declared: h100-sxm)", no guess: difflib's
        # ratio of 'H100-SXM' to 'h100-sxm' is 0.5, under its cutoff
        ("supply: {h100-sxm:", "supply: {H100-SXM:",
         "unknown GPU 'H100-SXM'; did you mean 'h100-sxm'?"),
        ("demand: {us-east:", "demand: {US-EAST:",
         "unknown region 'US-EAST'; did you mean 'us-east'?"),
    ],
    ids=["gpu", "region"],
)  # fmt: skip
def test_a_name_in_the_wrong_case_is_guessed_in_the_instance(run_cli, tmp_path, old, new, needle):
    run_checked(run_cli, "validate", _instance_with(tmp_path, old, new), needles=(needle,))


def test_a_catalog_name_in_the_wrong_case_is_guessed_on_the_command_line(run_cli, tmp_path):
    # before: "unknown GPU 'H100-SXM' (catalog has a100-80gb-sxm, h100-sxm, ...)"
    perf = ("perf", "-g", "H100-SXM", "-m", "llama-3.1-8b", "-i", "100", "-o", "100")
    run_checked(run_cli, *perf, needles=("unknown GPU 'H100-SXM'; did you mean 'h100-sxm'?",))
    # before: "gpu: 'H100-SXM' is not in the catalog (fleetplan catalog)"
    from tests.cli.test_calibrate_unplaced import HEADER

    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER}\nllama-3.1-8b,H100-SXM,bf16,1,1000,200,8,3000,50,10\n")
    needle = "gpu: 'H100-SXM' is not in the catalog; did you mean 'h100-sxm'?"
    run_checked(run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml", needles=(needle,))


# --- fleet-import: a pool annotation that says a field twice ---------------------------

ANNOTATED = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat-pool
  annotations:
    fleetplan.io/pool: '{LAYOUT}'
spec:
  replicas: 2
"""


def test_a_pool_annotation_giving_a_field_twice_is_refused(run_cli, tmp_path):
    """{"tp": 1, ..., "tp": 2} imported as TP 2 with exit 0 (json.loads keeps the last),
    where every other reader refuses a key given twice."""
    layout = json.dumps({**POOL, "tp": 1, "pp": 1, "role": "unified"})[:-1] + ', "tp": 2}'
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(ANNOTATED.replace("{LAYOUT}", layout))
    out = tmp_path / "out.yaml"
    needles = ("document 0 (Deployment chat-pool): fleetplan.io/pool gives 'tp' twice",)
    run_checked(run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                "--instance-out", out, needles=needles)  # fmt: skip
    assert not out.exists()


def test_a_workload_the_instance_lacks_is_quoted_so_its_spaces_show(run_cli, tmp_path):
    # before: "the fleet serves workloads the instance lacks:  chat  (instance ...": the
    # spaces that made ' chat ' unknown did not show
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(
        "workload,region,gpu,precision,tp,pp,replicas\n chat ,us-east,h100-sxm,fp8,1,1,2\n"
    )
    out = tmp_path / "out.yaml"
    needles = (
        "the fleet serves workloads the instance lacks: ' chat ' (instance workloads: 'chat')",
    )
    run_checked(run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                "--instance-out", out, needles=needles)  # fmt: skip


# --- a plan's status is one the solver writes -------------------------------------------


@pytest.mark.parametrize("status", ["happy", "infeasible", "optimal!", "feasible (gap lots)"])
def test_a_status_no_solve_writes_is_refused(run_cli, tmp_path, status):
    """A plan stating status 'happy' (or 'infeasible', beside its replicas) verified 'ok'
    with exit 0, and report and deploy carried the word on."""
    plan = tmp_path / "plan.json"
    pool = {**POOL, "tp": 1, "pp": 1, "count": 1}
    plan.write_text(json.dumps({"status": status, "replicas": [pool]}))
    needle = f"status: must be 'optimal', 'feasible (gap X%)' or 'given', got {status!r}"
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=(needle,))


@pytest.mark.parametrize(
    "status", ["optimal", "given", "feasible (gap 4.67%)", "feasible (gap unknown)"]
)
def test_the_statuses_solve_writes_still_verify(run_cli, tmp_path, status):
    plan = tmp_path / "plan.json"
    pool = {**POOL, "tp": 1, "pp": 1, "count": 1}
    plan.write_text(json.dumps({"status": status, "replicas": [pool]}))
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, code=0)


def test_an_unknown_scenario_lists_the_plans_scenarios_quoted(run_cli, tmp_path):
    # before: "scenario 'mars' is not in the plan; it has none": the plan has one
    # scenario, named 'none' (no failure), which read as no scenario at all
    plan = tmp_path / "plan.json"
    run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, "--json", plan, code=0)
    needle = "--scenario: scenario 'mars' is not in the plan; it has 'none'"
    run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, plan, "--scenario", "mars",
                needles=(needle,))  # fmt: skip


# --- bytes of the command line that are not UTF-8 --------------------------------------
# Python reads an argument's byte 0xff that is not UTF-8 as the lone surrogate U+DCFF


def test_a_set_value_holding_a_byte_that_is_not_utf8_is_refused(run_cli, tmp_path):
    # before: 'internal error: ... UnicodeEncodeError: 'utf-8' codec can't encode character
    # '\udcff' in position 2: surrogates not allowed', exit 70, as the plan was written
    plan = tmp_path / "plan.json"
    change = "workloads[chat].name=ch\udcffat"
    needles = ("--set", "byte 0xff (character 3 of the value) is not UTF-8")
    run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, "--set", change, "--json", plan,
                needles=needles)  # fmt: skip
    assert not plan.exists()


@pytest.mark.parametrize("where", ["--name", "-o"])
def test_a_profile_name_holding_a_byte_that_is_not_utf8_is_refused(run_cli, tmp_path, where):
    # before: the profile was written with `profile: "my\uDCFFprof"`, a file that
    # --engine then refused ('not YAML'); -o's stem names the profile when --name is absent
    from tests.cli.test_calibrate_cli import _write_runs

    runs = tmp_path / "runs.csv"
    _write_runs(runs)
    named = where == "--name"
    profile = tmp_path / ("mine.yaml" if named else "my\udcffprof.yaml")
    extra = ("--name", "my\udcffprof") if named else ()
    needles = (where, "byte 0xff (character 3 of the name) is not UTF-8")
    run_checked(run_cli, "calibrate", runs, "-o", profile, *extra, needles=needles)
    assert not profile.exists()


# --- a number with a leading zero -------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "seen", "octal"),
    [
        ("peak_requests_per_s: 20", "peak_requests_per_s: 017", "017", 15),  # 1 x 8 + 7
        ("max_gpus: 64", "max_gpus: 0100", "0100", 64),  # 1 x 8^2
    ],
)
def test_a_number_with_a_leading_zero_is_refused_naming_the_line(
    run_cli, tmp_path, old, new, seen, octal
):
    """`peak_requests_per_s: 017` planned 15 requests/s with exit 0: YAML 1.1 reads a
    leading zero as octal (YAML 1.2 and JSON as 17, or not at all)."""
    text = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "inst.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if old in row)
    needles = (f"{path}:{line}: {seen!r} reads in YAML 1.1 as the octal number {octal}",)
    run_checked(run_cli, "validate", path, needles=needles)


def test_a_number_with_a_leading_zero_in_a_set_is_refused_and_zero_is_still_zero(run_cli):
    # 7 x 8^2 = 448 ms
    needles = (
        "--set: workloads[chat].slo.ttft_p99_ms: value '0700' reads in YAML 1.1 as the octal",
    )
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set",
                "workloads[chat].slo.ttft_p99_ms=0700", needles=needles)  # fmt: skip
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set",
                "workloads[chat].prefix_cache_hit_rate=0", code=0)  # fmt: skip
    # a leading zero that reads the same in octal and in decimal is the number written
    # (a UTC offset of -05 is -5 either way)
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set",
                "regions[us-east].utc_offset_hours=-05", code=0)  # fmt: skip


# --- a value of another YAML type where a word or a mapping belongs ---------------------


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        # before: "Input should be 'none', 'replica', 'zone' or 'region' (got False)"
        ("survive: none", "survive: false",
         "policy.survive: Input should be 'none', 'replica', 'zone' or 'region' (got false): "
         "YAML reads an unquoted true or false as a boolean; quote it"),
        # before: "Input should be a valid dictionary or instance of GpuEntry (got ...)",
        # a class name the user never wrote
        ("gpus: [{name: h100-sxm}]", "gpus: [h100-sxm]",
         "gpus[0]: must be a mapping of fields (key: value), got 'h100-sxm'"),
    ],
    ids=["boolean-for-a-word", "text-for-a-mapping"],
)  # fmt: skip
def test_a_value_of_another_type_says_what_belongs_there(run_cli, tmp_path, old, new, needle):
    path = _instance_with(tmp_path, old, new)
    result = run_checked(run_cli, "validate", path, needles=(needle,))
    assert "GpuEntry" not in result.stderr


def test_compare_of_an_infeasible_base_says_infeasible_once(run_cli, tmp_path):
    # before: 'the base has no plan to compare with (infeasible: infeasible: 1 requirement
    # cannot be met ...)'
    base = _instance_with(tmp_path, "max_gpus: 64", "max_gpus: 0")
    result = run_checked(run_cli, "compare", base, ONE_MODEL_ONE_REGION, code=1)
    text = " ".join(result.stdout.split())  # the reason is wrapped in its table cell
    assert "(infeasible: 1 requirement cannot be met" in text, text
    assert "infeasible: infeasible" not in text


def test_verify_s_summary_writes_every_count_alike(run_cli, tmp_path):
    # before: '1,000,000,000 GPUs bought, 1000000000 used, $1,752,000,000,000/month' and
    # for 10^30 replicas '$1,751,999,999,999,999,983,046,467,002,564,608/month', a float's
    # digits past its precision
    fleet = tmp_path / "fleet.json"
    for count, counts, cost in [
        (10**9, "1,000,000,000 GPUs bought, 1,000,000,000 used", "$1,752,000,000,000/month"),
        # 10^30 GPUs x $2.40 x 730 h = $1.752e33
        (10**30, "used", "$1.75e+33/month"),
    ]:
        fleet.write_text(json.dumps({"replicas": [{**POOL, "tp": 1, "pp": 1, "count": count}]}))
        result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, fleet, code=1,
                             needles=(counts, cost))  # fmt: skip
        assert "000000000 used" not in result.stderr


# --- simulate: an open-arrival replay of more requests than a minute runs --------------


def test_a_replay_of_more_requests_than_the_bound_is_refused_before_it_runs(run_cli, tmp_path):
    """--minutes 1440 on the fixture's plan (20 requests/s on one replica) passed the
    router-step bound (20 x 86,400 s x (1 + 1) = 3.5 x 10^6 steps of 10^8) yet ran past
    100 s: each request costs the replay far more than one router step (~10,000 requests
    a CPU-second), so one replica's pool was held to 5 x 10^7 requests, hours."""
    from models.schema import flag_limits

    plan = tmp_path / "plan.json"
    run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, "--json", plan, code=0)
    requests = 20 * 1440 * 60  # the fixture's 20 requests/s for a day: 1,728,000
    longest_s = 1440 * 60 * flag_limits.REPLAY_REQUESTS.count / requests
    needles = ("--minutes", "1.73e+06 requests", f"the longest that fits is {longest_s:.3g} s")
    run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, plan, "--minutes", "1440",
                needles=needles)  # fmt: skip


# --- an output onto a file the instance reads ------------------------------------------

PROFILE = "kind: fleetplan-engine-profile\nprofile: mine\nby_key:\n  default: {hbm_fraction: 0.6}\n"
"""The smallest engine profile an instance reads (`engine: mine.yaml`)."""


@pytest.mark.parametrize(
    "command",
    [
        ("solve", "--json"),
        ("solve", "--markdown"),
        ("explain", "--json"),
        ("validate", "--json"),
        ("verify", "PLAN", "--json"),
        ("simulate", "PLAN", "--json"),
        ("compare", "INSTANCE", "--markdown"),
    ],
    ids=lambda command: " ".join(command),
)
def test_an_output_never_replaces_the_engine_profile_the_instance_reads(run_cli, tmp_path, command):
    """`solve inst.yaml --json mine.yaml`, the instance holding `engine: mine.yaml`, wrote
    the plan over the user's calibrated profile with exit 0 (the next run then refused the
    instance: 'kind: fleetplan-engine-profile missing')."""
    profile = tmp_path / "mine.yaml"
    profile.write_text(PROFILE)
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text() + "engine: mine.yaml\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replicas": [{**POOL, "tp": 1, "pp": 1, "count": 1}]}))
    name, *rest = command
    args = [{"PLAN": plan, "INSTANCE": instance}.get(part, part) for part in rest]
    # refused as it is not an earlier output of the command's kind (hostile18's rule),
    # before the instance is read
    needles = (f"{profile}: exists and holds an engine profile",)
    run_checked(run_cli, name, instance, *args, profile, needles=needles)
    assert profile.read_text() == PROFILE


def test_sweep_and_fleet_import_never_write_over_the_engine_profile(run_cli, tmp_path):
    # before: both wrote over mine.yaml with exit 0 (sweep its JSON, fleet-import the
    # instance with `existing` set)
    profile = tmp_path / "mine.yaml"
    profile.write_text(PROFILE)
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text() + "engine: mine.yaml\n")
    grid = tmp_path / "grid.yaml"
    grid.write_text("instance: inst.yaml\naxes:\n  policy.survive: [none]\n")
    needles = (f"{profile}: exists and holds an engine profile", "not an earlier JSON output")
    run_checked(run_cli, "sweep", grid, "--json", profile, needles=needles)
    needles = (f"{profile}: exists and is not an instance file",)  # nor an instance's read
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(
        "workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h100-sxm,fp8,1,1,2\n"
    )
    run_checked(run_cli, "fleet-import", fleet, "--instance", instance, "--instance-out", profile,
                needles=needles)  # fmt: skip
    assert profile.read_text() == PROFILE


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("workload", "Chat", "unknown workload 'Chat'; did you mean 'chat'?"),
        ("region", "us-east ", "unknown region 'us-east '; did you mean 'us-east'?"),
        ("gpu", "H100-SXM", "unknown GPU 'H100-SXM'; did you mean 'h100-sxm'?"),
    ],
)
def test_a_pool_of_a_name_the_instance_spells_otherwise_is_guessed(
    run_cli, tmp_path, field, value, said
):
    # before: "unknown workload 'Chat'" alone, beside the workload the instance has
    fleet = tmp_path / "fleet.json"
    fleet.write_text(
        json.dumps({"replicas": [{**POOL, "tp": 1, "pp": 1, "count": 1, field: value}]})
    )
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, fleet, code=1, needles=(said,))
