"""Hostile input, round thirteen: plans edited by hand past what a number can hold or of
the wrong type, files that are not what they claim, and outputs that would lose what the
user had. Each case below was an internal error (exit 70), read as something else, or
named the wrong thing; each now names the field or file with exit 2."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}
FLEET = {**POOL, "tp": 1, "pp": 1, "role": "unified", "count": 2}
"""A hand-written fleet of one-model-one-region: 2 replicas of one H100 each."""


def _plan(tmp_path, data, name="plan.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# --- plan integers beyond any float, and booleans read as 1 ----------------------------


@pytest.mark.parametrize("command", ["verify", "simulate", "report", "deploy"])
def test_a_replica_count_beyond_any_float_is_bad_input_naming_the_field(run_cli, tmp_path, command):
    """10^400 replicas with a stated routing weight: count x rate overflowed a float in
    the verifier's routing-weight check (OverflowError: int too large to convert to
    float, exit 70) in verify and in the three commands that verify first."""
    pool = {**FLEET, "count": 10**400, "routing_weight": 1.0, "requests_per_s_per_replica": 5.0}
    plan = _plan(tmp_path, {"replicas": [pool]})
    args = {
        "verify": ("verify", ONE_MODEL_ONE_REGION, plan),
        "simulate": ("simulate", ONE_MODEL_ONE_REGION, plan),
        "report": ("report", ONE_MODEL_ONE_REGION, "--plan", plan, "-o", tmp_path / "r.html"),
        "deploy": ("deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm",
                   "--out", tmp_path / "out"),
    }[command]  # fmt: skip
    needle = "replicas[0].count: must be at most an integer of about 10^30, got an integer"
    run_checked(run_cli, *args, needles=(needle,))
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        # an hour's GPUs used, owned GPUs, a server's GPUs: in diurnal-chat-batch's
        # solved plan each overflowed a float in the verifier or the summary (exit 70)
        (("hours", 0, "gpus", 0, "used"), 10**400, "hours[0].gpus[0].used: must be"),
        (("gpus", 0, "existing"), 10**400, "gpus[0].existing: must be at most"),
        (("servers", 0, "gpus_per_server"), 10**400, "servers[0].gpus_per_server: must"),
        # booleans: pydantic read true as 1, and verify said 'states 1' of a field
        # the user wrote `true` in
        (("gpus", 0, "existing"), True, "gpus[0].existing: must be a number"),
        (("total_gpus",), True, "total_gpus: must be a number"),
        (("cost_per_month",), True, "cost_per_month: must be a number"),
    ],
    ids=["hour-gpus-used", "existing", "gpus-per-server", "bool-existing", "bool-total",
         "bool-cost"],
)  # fmt: skip
def test_every_integer_of_a_plan_is_bounded_and_never_a_boolean(
    run_cli, tmp_path, path, value, needle
):
    gpus = {
        "region": "us-east",
        "gpu": "h100-sxm",
        "used": 2,
        "existing": 0,
        "purchased": 2,
        "available": 64,
        "price_per_gpu_hour": 2.4,
        "cost_per_month": 2 * 2.4 * 730,
    }
    hour = {
        "hour": 0,
        "period": 0,
        "pools": [FLEET],
        "gpus": [{"region": "us-east", "gpu": "h100-sxm", "used": 2}],
    }
    data = {"replicas": [FLEET], "gpus": [gpus], "total_gpus": 2, "cost_per_month": 3504.0,
            "servers": [{"region": "us-east", "gpu": "h100-sxm", "count": 1,
                         "gpus_per_server": 8}], "hours": [hour]}  # fmt: skip
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, _plan(tmp_path, data), needles=(needle,))


def test_a_count_of_ten_to_the_thirty_is_still_a_plan_verify_judges(run_cli, tmp_path):
    """The bound sits past any fleet: 10^30 replicas are read and judged (exit 1, the
    supply of 64 GPUs exceeded: 10^30 x 1 GPU), as before."""
    plan = _plan(tmp_path, {"replicas": [{**FLEET, "count": 10**30}]})
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, code=1, needles=("gpu_supply",))


# --- files that are not what they claim: named as what they were given as -------------


@pytest.mark.parametrize(
    ("command", "what"), [("estimate", "an estimate config"), ("sweep", "a sweep grid")]
)
def test_a_folder_or_device_is_named_as_the_file_it_was_given_as(run_cli, tmp_path, command, what):
    """estimate --config and sweep read their files as instances: a folder read 'is a
    folder, not an instance file (`fleetplan batch` solves a folder)' and /dev/zero
    '(instance files must be regular files)'."""
    folder = tmp_path / "grid"
    folder.mkdir()
    args = ("estimate", "--config") if command == "estimate" else ("sweep",)
    result = run_checked(run_cli, *args, folder, needles=(f"is a folder, not {what} file",))
    assert "batch" not in result.stderr
    kind = what.split(" ", 1)[1]
    needle = f"is a character device, not a regular file ({kind} files must be regular files)"
    device = tmp_path / "zero.yaml"
    device.symlink_to("/dev/zero")
    run_checked(run_cli, *args, device, needles=(needle,))


@pytest.mark.parametrize(
    ("text", "kind"), [("", "empty"), ("<html><body>a page</body></html>\n", "a str"),
                       ("[1, 2]\n", "a list")],
    ids=["empty", "html", "list"],
)  # fmt: skip
@pytest.mark.parametrize("command", ["verify", "simulate", "deploy"])
def test_a_plan_file_holding_no_mapping_says_so(run_cli, tmp_path, text, kind, command):
    """An empty plan file, an HTML page saved as plan.yaml, or a JSON list read pydantic's
    'Input should be a valid dictionary or instance of Plan', a class name the user
    never wrote."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    args = {
        "verify": ("verify", ONE_MODEL_ONE_REGION, plan),
        "simulate": ("simulate", ONE_MODEL_ONE_REGION, plan),
        "deploy": ("deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm",
                   "--out", tmp_path / "out"),
    }[command]  # fmt: skip
    needle = f"plan.yaml:1: a plan is a mapping (`fleetplan solve --json` writes one), got {kind}"
    result = run_checked(run_cli, *args, needles=(needle,))
    assert "instance of Plan" not in result.stderr


# --- a --set value giving a key twice ---------------------------------------------------


def test_a_set_value_giving_a_key_twice_is_refused_as_a_file_is(run_cli):
    """An instance file giving a key twice is refused (the second would replace the
    first); a --set value was read by YAML, which keeps the later: us-east at 1 and then
    2 requests/s validated 'ok' at 2.0 peak requests/s in all."""
    value = "{us-east: {peak_requests_per_s: 1}, us-east: {peak_requests_per_s: 2}}"
    needle = "workloads[chat].demand: value gives the key 'us-east' twice"
    args = ("validate", ONE_MODEL_ONE_REGION, "--set", f"workloads[chat].demand={value}")
    run_checked(run_cli, *args, needles=(needle,))
    once = "{us-east: {peak_requests_per_s: 2}}"
    args = ("validate", ONE_MODEL_ONE_REGION, "--set", f"workloads[chat].demand={once}")
    assert "2.0 peak requests/s" in run_checked(run_cli, *args, code=0).stdout


# --- deploy's own-file check on a file nested past the JSON reader -----------------------


def test_a_deeply_nested_pools_json_in_the_folder_is_named_and_kept(run_cli, tmp_path):
    """The user's own pools.json of 50,000 nested lists in deploy's folder: the check of
    whether deploy wrote it raised RecursionError, which read 'the input is too large or
    too deeply nested to process' naming no file (the plan and the instance are small).
    It is now a file deploy did not write, named, and kept as it was."""
    plan = _plan(tmp_path, {"replicas": [FLEET]})
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "pools.json"
    mine.write_text("[" * 50_000 + "]" * 50_000)
    before = mine.read_bytes()
    args = ("deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm", "--out", out)
    run_checked(run_cli, *args, needles=("pools.json: exists and was not written by",))
    assert mine.read_bytes() == before and sorted(out.iterdir()) == [mine]


# --- an engine profile file's unknown key -----------------------------------------------


@pytest.mark.parametrize(
    ("key", "needle"),
    [("falback", "unknown key 'falback'; did you mean 'fallback'?"),
     ("settings", "unknown key 'settings' (a profile file holds kind, profile, fallback")],
)  # fmt: skip
def test_a_profile_file_key_no_reader_reads_is_refused(run_cli, tmp_path, key, needle):
    """A profile file's top-level keys were read by name and the rest ignored: `falback:
    vllm-0.10` (a typo) validated and planned on the default fallback, trtllm-0.20, and a
    catalog profile's `settings` copied into a file were dropped without a word."""
    profile = tmp_path / "mine.yaml"
    profile.write_text(
        "kind: fleetplan-engine-profile\nprofile: mine\nby_key:\n  default: {}\n"
        f"{key}: vllm-0.10\n"
    )
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text() + "engine: mine.yaml\n")
    run_checked(run_cli, "validate", instance, needles=(needle,))
    shape = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "200")
    run_checked(run_cli, "perf", *shape, "--engine", profile, needles=(needle,))


# --- a static plan's scenario row given twice -------------------------------------------


def test_a_static_plans_scenario_given_twice_fails(run_cli, tmp_path):
    """A static plan's `scenarios` table with its 'none' row given again verified ok (each
    row was judged alone); the report then showed the scenario twice."""
    none = {"name": "none", "description": "no failure; users served in their own region"}
    plan = _plan(tmp_path, {"replicas": [FLEET], "scenarios": [none, none]})
    needle = "scenarios[1]: name none is scenarios[0] again: each once"
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, code=1, needles=(needle,))


# --- a profile name longer than any name --------------------------------------------------


def test_a_profile_name_past_the_name_bound_is_refused(run_cli, tmp_path):
    """calibrate --name took 100,000 characters and wrote them into the profile, which
    every solve, perf and report then printed whole on its header line; an instance's
    names stop at 256 characters (MAX_NAME_CHARS). Both the flag and a file's `profile`
    are held to it now."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,gpu,precision,tp,isl,osl,concurrency,output_tok_s\n"
                    "llama-3.1-8b,h100-sxm,bf16,1,1000,200,1,100\n")  # fmt: skip
    needle = "--name: is 300 characters; a name is at most 256"
    args = ("calibrate", runs, "-o", tmp_path / "p.yaml", "--name", "n" * 300)
    run_checked(run_cli, *args, needles=(needle,))
    assert not (tmp_path / "p.yaml").exists()
    profile = tmp_path / "mine.yaml"
    profile.write_text(
        "kind: fleetplan-engine-profile\nprofile: " + "n" * 300 + "\nby_key:\n  default: {}\n"
    )
    shape = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "200")
    needle = "profile is 300 characters; a name is at most 256"
    run_checked(run_cli, "perf", *shape, "--engine", profile, needles=(needle,))


# --- a plan of another version ----------------------------------------------------------


@pytest.mark.parametrize("command", ["verify", "simulate"])
def test_a_plan_key_this_version_lacks_is_named_as_one(run_cli, tmp_path, command):
    """A plan from another fleetplan version (a top-level `version`, a pool's new field)
    read pydantic's 'version: Extra inputs are not permitted', which says neither that
    the key is unknown nor why it might be there."""
    plan = _plan(tmp_path, {"version": "99.0", "replicas": [{**FLEET, "warm_pool": 2}]})
    needles = (
        "version: unknown key 'version': no plan this fleetplan writes or reads has it "
        "(a plan of another fleetplan version, or a key edited by hand?)",
        "replicas[0].warm_pool: unknown key 'warm_pool'",
    )
    result = run_checked(run_cli, command, ONE_MODEL_ONE_REGION, plan, needles=needles)
    assert "Extra inputs" not in result.stderr


# --- a negative rate in an hourly plan ----------------------------------------------------


@pytest.mark.parametrize(
    ("where", "needle"),
    [
        # verify's headroom check handed it to pool_headroom, which raised ValueError
        (("replicas", 0), "replicas[0].requests_per_s_per_replica: Input should be greater"),
        # the batch check summed it into an hour's room, and schedule_batch raised
        (("hours", 0, "batch_soak", 0), "hours[0].batch_soak[0].requests_per_s: Input should"),
    ],
    ids=["pool-capacity", "batch-soak"],
)  # fmt: skip
def test_a_negative_rate_in_an_hourly_plan_is_bad_input(run_cli, tmp_path, where, needle):
    """A rate of -1 in diurnal-chat-batch's solved plan was an internal error (exit 70) in
    verify: a pool's requests/s per replica (ValueError: capacity_rps_per_replica must be
    > 0) or an hour's soaked batch requests/s (ValueError: need 24 hourly values >= 0).
    Here the same fields of a hand-written hour: the plan schema refuses them first."""
    soak = {"batch": "nightly", "workload": "chat", "region": "us-east",
            "configuration": "h100-sxm.fp8.tp1pp1.unified", "requests_per_s": 1.0,
            "batch_requests_per_s_per_replica": 2.0}  # fmt: skip
    pool = {**FLEET, "requests_per_s_per_replica": 5.0}
    data = {"replicas": [pool], "hours": [{"hour": 0, "period": 0, "pools": [pool],
                                           "batch_soak": [soak]}]}  # fmt: skip
    target = data
    for key in where:
        target = target[key]
    target["requests_per_s" if "batch_soak" in where else "requests_per_s_per_replica"] = -1
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, _plan(tmp_path, data), needles=(needle,))
