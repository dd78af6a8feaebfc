"""Hostile input, round eighteen: dates read as YAML 1.2's core schema reads them, plan
files' errors worded as instance errors are, two sweeps into one results file, and a
plan's hours or months that its instance does not plan."""

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

TEXT = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")

# --- dates are text, as every other plain scalar YAML 1.2 does not type -----------------------


@pytest.mark.parametrize("date", ["2026-01-05", "2026-01-05T10:00:00", "2026-1-5 10:00:00"])
def test_an_unquoted_date_in_a_name_is_text(run_cli, tmp_path, date):
    """`name: 2026-01-05` was refused ('must be text, got datetime.date(2026, 1, 5)') while
    `name: no` and `name: 6_4` are text: YAML 1.1 types a date, YAML 1.2's core schema
    (JSON's, an editor's) has no dates. A name or a description keeps it as written."""
    path = tmp_path / "dated.yaml"
    path.write_text(
        TEXT.replace("name: one-model-one-region", f"name: {date}") + f"description: {date}\n",
        encoding="utf-8",
    )
    result = run_checked(run_cli, "validate", path, code=0)
    assert "date" not in result.stderr


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("policy.horizon_months=2026-01-05", "policy.horizon_months"),
        ("policy.lead_time_months=2026-01-05", "policy.lead_time_months"),
        ("policy.hours_per_month=2026-01-05", "policy.hours_per_month"),
        ("policy.monthly_growth=2026-01-05", "policy.monthly_growth"),
        ("workloads[0].monthly_growth=2026-01-05T10:00:00", "workloads[0].monthly_growth"),
    ],
)
def test_a_date_in_a_month_field_is_text_a_number_field_refuses(run_cli, override, field):
    """`--set policy.horizon_months=2026-01-05` said 'Input should be a valid integer (got
    datetime.date(2026, 1, 5))', pydantic's words about a Python object; as text it is
    refused as `abc` is, naming the field and showing what was written."""
    value = override.split("=", 1)[1]
    needles = (f"{field}: must be a number, got the text {value!r}",)
    result = run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", override,
                         needles=needles)  # fmt: skip
    assert "datetime" not in result.stderr


# --- a plan file's errors read as an instance file's ------------------------------------------

_POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8",
         "tp": 1, "pp": 1, "role": "unified", "count": 2}  # fmt: skip


def _bad_plan(tmp_path):
    """A plan with four refused fields, one per line of its own (indent=2 puts each key
    of a pool on a line): a count as text, a fractional tp, a misspelt key, a missing gpu."""
    import json

    pools = [dict(_POOL) for _ in range(4)]
    pools[0]["count"] = "abc"
    pools[1]["tp"] = 2.5
    pools[2]["cuont"] = 3
    del pools[3]["gpu"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replicas": pools, "cost_per_month": 1.0}, indent=2))
    lines = plan.read_text().splitlines()

    def line_of(text, after=0):
        return next(n for n, line in enumerate(lines, 1) if n > after and text in line)

    starts = [n for n, line in enumerate(lines, 1) if line.strip() == "{" and n > 1]
    return plan, {
        "replicas[0].count": line_of('"count": "abc"'),
        "replicas[1].tp": line_of('"tp": 2.5'),
        "replicas[2].cuont": line_of('"cuont"'),
        "replicas[3].gpu": starts[3],  # a missing key: the line its pool opens on
    }


@pytest.mark.parametrize(
    "command",
    [
        ("verify", ONE_MODEL_ONE_REGION, "PLAN"),
        ("simulate", ONE_MODEL_ONE_REGION, "PLAN"),
        ("report", ONE_MODEL_ONE_REGION, "-o", "OUT/r.html", "--plan", "PLAN"),
        ("deploy", "PLAN", "--instance", ONE_MODEL_ONE_REGION, "--target", "k8s",
         "--out", "OUT/k8s"),
    ],
    ids=["verify", "simulate", "report", "deploy"],
)  # fmt: skip
def test_a_plan_file_s_errors_name_file_line_field_and_value(run_cli, tmp_path, command):
    """Each read 'plan.json: replicas.0.count: Value error, must be a number, got the text
    'abc'', 'replicas.1.tp: Input should be a valid integer, got a number with a fractional
    part' (no value), 'replicas.3.gpu: Field required': no line, pydantic's path and words.
    An instance's read 'inst.yaml:12: regions[0].supply...: must be ...'; a plan's now do."""
    plan, lines = _bad_plan(tmp_path)
    args = [plan if a == "PLAN" else a for a in command]
    args = [str(tmp_path / a[4:]) if isinstance(a, str) and a.startswith("OUT/") else a
            for a in args]  # fmt: skip
    needles = (
        f"{plan}:{lines['replicas[0].count']}: replicas[0].count: must be a number, "
        "got the text 'abc'",
        f"{plan}:{lines['replicas[1].tp']}: replicas[1].tp: Input should be a valid integer, "
        "got a number with a fractional part (got 2.5)",
        f"{plan}:{lines['replicas[2].cuont']}: replicas[2].cuont: unknown key 'cuont'; "
        "did you mean 'count'?",
        f"{plan}:{lines['replicas[3].gpu']}: replicas[3].gpu: required field is missing",
    )
    result = run_checked(run_cli, *args, needles=needles)
    assert "Value error" not in result.stderr and "Field required" not in result.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "k8s").exists()


def test_a_plan_s_unknown_key_unlike_any_says_what_a_plan_may_hold(run_cli, tmp_path):
    import json

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replicas": [_POOL], "version": 3}))
    needles = (f"{plan}:1: version: unknown key 'version': no plan this fleetplan writes or "
               "reads has it",)  # fmt: skip
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=needles)


# --- two grids into one results file ------------------------------------------------------


def _two_grids(tmp_path):
    """Two grids on one instance with the same axis (so the same point keys): b's points
    differ by a `set` (max_utilization 0.5), so their instances' fingerprints differ."""
    import shutil

    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "base.yaml")
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("instance: base.yaml\naxes:\n  demand_growth: [1.0, 2.0]\n")
    b.write_text("instance: base.yaml\nset:\n  policy.max_utilization: 0.5\n"
                 "axes:\n  demand_growth: [1.0, 2.0]\n")  # fmt: skip
    return a, b


def test_a_second_grid_into_one_results_file_is_refused_and_the_first_resumes(run_cli, tmp_path):
    """Grid b swept into a's results.jsonl took a's two lines for stale versions of its own
    points (same keys, another instance), solved both again and appended its lines after
    them; a's next run then took b's for stale and solved its own again: each sweep's
    results shadowed the other's and neither resumed. b is refused naming the file and
    a's grid, before it writes; a still resumes both points from the file."""
    a, b = _two_grids(tmp_path)
    results = tmp_path / "results.jsonl"
    run_checked(run_cli, "sweep", a, "--out", results, code=0)
    written = results.read_bytes()
    needles = (f"{results}: --out: holds the results of another grid (a.yaml",
               "give each grid its own --out")  # fmt: skip
    run_checked(run_cli, "sweep", b, "--out", results, needles=needles)
    assert results.read_bytes() == written, "b wrote nothing"
    again = run_checked(run_cli, "sweep", a, "--out", results, code=0)
    assert "2 points, 0 to solve (2 already in" in again.stderr
    assert results.read_bytes() == written, "a resumed: nothing solved again"


# --- a plan's hours or months that its instance does not plan -----------------------------


@pytest.fixture(scope="module")
def day_and_flat(tmp_path_factory):
    """Two instances of one 8B workload in us-east at 2,000,000 requests a day: `day`
    plans hour by hour (8 quiet, 8 busy, 8 middling hours, [1]*8 + [3]*8 + [2]*8, and a
    reserved price), `flat` holds the day's peak all day (peak_to_average 1.5 = 3 / 2,
    the profile's peak over its mean; on-demand only); `months` is `day` over 2 months.
    Each with the plan solve writes for it (about a second of solving in all)."""
    import json

    import yaml

    from models.io.loading import load_instance
    from solver.solve import solve

    folder = tmp_path_factory.mktemp("time")
    data = yaml.safe_load(TEXT)
    supply = data["regions"][0]["supply"]["h100-sxm"]
    data["workloads"][0]["demand"] = {"us-east": {"requests_per_day": 2_000_000,
                                                  "peak_to_average": 1.5}}  # fmt: skip
    files = {"flat": dict(data)}
    data = yaml.safe_load(yaml.safe_dump(data))
    data["workloads"][0]["demand"]["us-east"] = {
        "requests_per_day": 2_000_000,
        "hourly_profile": [1] * 8 + [3] * 8 + [2] * 8,
    }
    data["regions"][0]["supply"]["h100-sxm"] = {**supply, "reserved_price_per_gpu_hour": 1.5}
    files["day"] = data
    files["months"] = {**data, "policy": {**data["policy"], "horizon_months": 2}}
    found = {}
    for name, content in files.items():
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(content), encoding="utf-8")
        plan = folder / f"{name}.json"
        plan.write_text(solve(load_instance(path)).model_dump_json())
        found[name] = (path, plan)
    assert json.loads(found["day"][1].read_text())["hours"], "day's plan is hourly"
    assert not json.loads(found["flat"][1].read_text())["hours"], "flat's is static"
    return found


def _commands(instance, plan, tmp_path):
    return {
        "verify": ("verify", instance, plan),
        "simulate": ("simulate", instance, plan),
        "report": ("report", instance, "--plan", plan, "-o", tmp_path / "r.html"),
        "deploy": ("deploy", plan, "--instance", instance, "--target", "vllm",
                   "--out", tmp_path / "out"),
    }  # fmt: skip


@pytest.mark.parametrize("command", ["verify", "simulate", "report", "deploy"])
def test_an_hourly_plan_against_an_instance_without_hours_is_refused_saying_so(
    run_cli, tmp_path, day_and_flat, command
):
    """day's hourly plan against flat (no profile, no reserved price) failed with 64
    violations, none saying why, and '$0/month recomputed' (its 8 committed GPUs at a
    reserved price flat does not offer). The first says what does not match."""
    (_, plan), (flat, _) = day_and_flat["day"], day_and_flat["flat"]
    needles = ("hours: the plan states 24 UTC hours (an hourly plan); the instance plans "
               "none (no hourly_profile on any demand, no reserved or spot price)",)  # fmt: skip
    run_checked(run_cli, *_commands(flat, plan, tmp_path)[command], code=1, needles=needles)
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("command", ["verify", "deploy"])  # simulate replays it: 2 s
def test_a_static_plan_against_an_hourly_instance_is_noted(
    run_cli, tmp_path, day_and_flat, command
):
    """flat's static plan (its peak held all day) serves day's every hour, so it verifies,
    but it read 'ok ... $14,016/month' (8 GPUs bought for the month, 8 x $2.4 x 730)
    without a word that day plans its hours and reserved GPUs (its own plan: $8,760). A
    warning says so; the verdict stands (exit 0)."""
    (_, plan), (day, _) = day_and_flat["flat"], day_and_flat["day"]
    needles = ("the instance plans each UTC hour (an hourly_profile on "
               "workloads[chat].demand.us-east; a reserved or spot price on us-east h100-sxm); "
               "the plan states no hours",)  # fmt: skip
    run_checked(run_cli, *_commands(day, plan, tmp_path)[command], code=0, needles=needles)


def test_a_plan_of_months_against_an_instance_without_months_says_so(
    run_cli, tmp_path, day_and_flat
):
    """It read 'needs months 0 .. horizon_months - 1 once each in order (horizon_months
    None); got 2 months starting [0, 1]'."""
    (_, plan), (day, _) = day_and_flat["months"], day_and_flat["day"]
    needles = ("months: the plan states 2 months; the instance plans none (no "
               "policy.horizon_months)",)  # fmt: skip
    result = run_checked(run_cli, "verify", day, plan, code=1, needles=needles)
    assert "None" not in result.stderr


# --- found by fuzzing (the script in the report) -----------------------------------------


def test_a_plan_s_text_of_megabytes_is_refused_not_echoed(run_cli, tmp_path):
    """A plan whose pool's region was 10 MiB of 'x' verified as 12 violations, the name
    printed whole in two of them: 20,972,692 bytes on stderr (an instance's names stop at
    MAX_NAME_CHARS). A plan's text is bounded too, and the refusal shows the start."""
    import json

    from models.schema.quantities import MAX_PLAN_TEXT_CHARS

    plan = tmp_path / "plan.json"
    long = MAX_PLAN_TEXT_CHARS + 1  # the 10 MiB found is refused the same way, slower
    plan.write_text(json.dumps({"replicas": [{**_POOL, "region": "x" * long}]}))
    needles = (f"replicas[0].region: is {long:,} characters long; at most "
               f"{MAX_PLAN_TEXT_CHARS:,}",)  # fmt: skip
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=needles)
    assert len(result.stderr) < 1_000


def test_a_sweep_axis_value_of_megabytes_is_shown_cut(run_cli, tmp_path):
    """A grid's `description: [a, <5 MiB of x>]` solved both points, then printed the
    value whole in its progress line (5,243,011 bytes on stderr) and in the cost surface
    (5,763,468 on stdout). Labels and table cells show its start and its length; the
    results file's key keeps it whole (a resumed sweep finds its point)."""
    import shutil

    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "base.yaml")
    grid = tmp_path / "grid.yaml"
    long = "x" * 100_000
    grid.write_text(f"instance: base.yaml\naxes:\n  description: [a, {long}]\n")
    result = run_checked(run_cli, "sweep", grid, code=0, needles=("(100,000 characters, cut)",))
    assert len(result.stderr) < 5_000 and len(result.stdout) < 10_000


def test_a_golden_file_s_errors_read_as_a_plan_s(run_cli, tmp_path):
    """A golden file (batch --check) named its fields as pydantic does: 'total_gpus: Input
    should be a valid integer, got a number with a fractional part' (no value),
    'binding_families.0: Input should be a valid string'; now as an instance's and a
    plan's: the path as written, the value shown."""
    import json
    import shutil

    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "a.yaml")
    golden = tmp_path / "a.expected.json"
    golden.write_text(json.dumps({"status": "optimal", "total_gpus": 2.5,
                                  "binding_families": [1]}, indent=2))  # fmt: skip
    lines = golden.read_text().splitlines()
    at = {key: next(n for n, text in enumerate(lines, 1) if key in text)
          for key in ("total_gpus", "binding_families")}  # fmt: skip
    result = run_checked(run_cli, "batch", tmp_path, "--check", code=1)
    said = " ".join((result.stdout + result.stderr).split())  # the table wraps its cells
    assert f"a.expected.json:{at['total_gpus']}: total_gpus: Input should be a valid integer, " \
        "got a number with a fractional part (got 2.5)" in said, said  # fmt: skip
    assert "binding_families[0]: must be text, got 1" in said


def test_another_grid_s_name_of_megabytes_is_shown_cut(run_cli, tmp_path):
    """refuse_other_grids named the other grid as its lines state it: a results line
    edited to a grid of 1,000,000 characters put them all in the refusal."""
    import json

    _, b = _two_grids(tmp_path)
    results = tmp_path / "results.jsonl"
    line = {"point": 0, "key": "[]", "grid": "g" * 1_000_000, "status": "bad_input"}
    results.write_text(json.dumps(line) + "\n")
    needles = ("holds the results of another grid", "(1,000,000 characters, cut)")
    result = run_checked(run_cli, "sweep", b, "--out", results, needles=needles)
    assert len(result.stderr) < 2_000


@pytest.mark.parametrize(
    ("name", "shown"),
    [("chat<!--", "chat&lt;!--"),
     ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)>"),
     ("a&lt;b", "a&amp;lt;b")],
    ids=["comment", "tag", "entity"],
)  # fmt: skip
def test_a_name_holding_html_is_text_in_markdown(run_cli, tmp_path, name, shown):
    """A workload named 'chat<!--' was written into solve --markdown as it is: rendered
    (a pull request's comment, a wiki), everything after its first cell was an HTML
    comment, the rest of the report gone without a word; '<img ... onerror=...>' became
    an image. Markdown cells, headings and notes write a '<' that opens HTML and an '&'
    that opens an entity as entities; '1 <' and 'a & b' stay as they are."""
    import yaml

    data = yaml.safe_load(TEXT)
    data["workloads"][0]["name"] = name
    path = tmp_path / "named.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    report = tmp_path / "r.md"
    run_checked(run_cli, "solve", path, "--markdown", report, code=0)
    text = report.read_text(encoding="utf-8")
    assert shown in text and name not in text
