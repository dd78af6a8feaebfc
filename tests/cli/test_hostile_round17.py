"""Hostile input, round seventeen: YAML 1.1's readings of plain scalars (`6_4` as 64, `no`
as false), a usage error said into a closed pipe, a time limit too short to plan anything,
names with control characters in lists and labels, and a plan without its instance's
months. Each case was a value read two ways, an exit code lost or a verdict too kind."""

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

TEXT = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")

# --- plain scalars read as YAML 1.2's core schema reads them ---------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "shown"),
    [
        ("max_gpus: 64", "max_gpus: 6_4", "regions[0].supply.h100-sxm.max_gpus", "'6_4'"),
        ("max_gpus: 64", "max_gpus: 0b1000000", "regions[0].supply.h100-sxm.max_gpus",
         "'0b1000000'"),
        ("price_per_gpu_hour: 2.4", "price_per_gpu_hour: 2_0.4",
         "regions[0].supply.h100-sxm.price_per_gpu_hour", "'2_0.4'"),
        ("max_gpus: 64", "max_gpus: on", "regions[0].supply.h100-sxm.max_gpus", "'on'"),
    ],
    ids=["underscore", "binary", "float-underscore", "on"],
)  # fmt: skip
def test_yaml_1_1_numbers_are_text(run_cli, tmp_path, old, new, field, shown):
    """`max_gpus: 6_4` offered 64 GPUs (YAML 1.1 drops the digit separator; 0b1000000 is
    1.1's binary 64) while `max_gpus: "6_4"`, `--pool-replicas 6_4` and a CSV's 6_4 are
    refused. YAML 1.2's core schema, JSON's and an editor's reading, has no separators and
    no binary: the value is text, and a numeric field refuses it, naming the field and
    showing it; `on`, 1.1's true, likewise."""
    path = tmp_path / "plain.yaml"
    path.write_text(TEXT.replace(old, new), encoding="utf-8")
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if new in text)
    needles = (f"{path}:{line}: {field}: must be a number, got the text {shown}",)
    run_checked(run_cli, "validate", path, needles=needles)


@pytest.mark.parametrize("name", ["no", "off", "2_0", "0b10"])
def test_yaml_1_1_booleans_and_numbers_are_names(tmp_path, name):
    """`name: no` (YAML 1.1's false, Norway's code) and `name: 2_0` (1.1's 20) are the
    text they spell in YAML 1.2, so a name keeps it."""
    from models.io.loading import load_instance

    path = tmp_path / "named.yaml"
    path.write_text(TEXT.replace("name: one-model-one-region", f"name: {name}"), "utf-8")
    assert load_instance(path).name == name


@pytest.mark.parametrize(
    ("written", "value"),
    [("64", 64), ("+64", 64), ("0x40", 64), ("0o100", 64), ("6.4e1", 64), ("64.", 64)],
)
def test_yaml_1_2_numbers_are_numbers(tmp_path, written, value):
    """What YAML 1.2's core schema reads as a number stays one: 0x40 = 4 x 16 = 64,
    0o100 = 8^2 = 64, 6.4e1 = 64."""
    from models.io.loading import load_instance

    path = tmp_path / "number.yaml"
    path.write_text(TEXT.replace("max_gpus: 64", f"max_gpus: {written}"), encoding="utf-8")
    assert load_instance(path).regions[0].supply["h100-sxm"].max_gpus == value


@pytest.mark.parametrize("written", ["6_4", '"6.4e1"'])
def test_a_set_value_follows_yaml_1_2(run_cli, written):
    """`--set` reads its value as the file's YAML: `6_4` is text there too, and so is a
    quoted exponent (`"6.4e1"` was turned into 64 after YAML had read the text)."""
    shown = written.strip('"')
    needles = (f"regions[0].supply.h100-sxm.max_gpus: must be a number, got the text '{shown}'",)
    run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION,
        "--set", f"regions[us-east].supply.h100-sxm.max_gpus={written}", needles=needles,
    )  # fmt: skip


# --- a usage error where the reader has gone ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [("perf", "-m", "x"), ("--bogus",), ("nosuch",), ("solve", "--time-limit", "abc", "x.yaml")],
    ids=["bad-choice", "group-flag", "no-command", "bad-number"],
)
def test_a_usage_error_into_a_closed_pipe_keeps_exit_2(argv):
    """`fleetplan perf -m x 2>&1 | head -0` exited 141: typer prints a usage error on a
    rich console, which exits 1 where the pipe is closed, read as the reader's going. A
    usage error is exit 2 whoever reads it."""
    from tests.cli.test_hostile_round15 import _into_closed_pipe

    assert _into_closed_pipe(*argv, stderr_too=True).returncode == 2


# --- a time limit too short to plan anything ----------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("solve", ONE_MODEL_ONE_REGION, "--time-limit", "5e-324"), "--time-limit"),
        (("explain", ONE_MODEL_ONE_REGION, "--time-limit", "1e-9"), "--time-limit"),
        (("explain", ONE_MODEL_ONE_REGION, "--levers", "--levers-time-limit", "0.01"),
         "--levers-time-limit"),
    ],
    ids=["solve", "explain", "levers"],
)  # fmt: skip
def test_a_time_limit_below_the_floor_is_refused(run_cli, argv, flag):
    """`solve --time-limit 5e-324` exited 4, 'time limit reached in candidates': no run
    plans anything in so little time, so it is bad input, naming the flag and the floor."""
    run_checked(run_cli, *argv, needles=(f"{flag}: must be at least 0.1 s, got ",))


def test_an_instances_time_limit_below_the_floor_is_refused(run_cli, tmp_path):
    path = tmp_path / "short.yaml"
    path.write_text(TEXT.replace("\npolicy:", "\nsolver: {time_limit_s: 0.01}\npolicy:"), "utf-8")
    needles = ("solver.time_limit_s: must be at least 0.1 s, got 0.01",)
    run_checked(run_cli, "validate", path, needles=needles)


# --- names with control characters, listed ---------------------------------------------------


def test_a_declared_name_with_a_tab_is_listed_escaped(run_cli):
    """`--set 'regions[0].name="us-east\\t"'`: the demand's 'us-east' is unknown, and the
    list of declared regions printed the tab as spaces ('declared: us-east      '), a name
    that looked like the one asked for. A name with a control character or outer spaces is
    listed as Python writes it."""
    result = run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", 'regions[0].name="us-east\\t"',
    )  # fmt: skip
    assert "(declared: 'us-east\\t')" in result.stderr, result.stderr


def test_a_selector_lists_names_escaped(run_cli):
    """`--set 'regions[us-east].…'` where the region is 'us-east\\t' lists the elements'
    names: the tab escaped, not printed."""
    result = run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION,
        "--set", 'regions[0].name="us-east\\t"', "--set", "regions[us-east].supply={}",
    )  # fmt: skip
    assert "has no element named 'us-east' ('us-east\\t')" in result.stderr, result.stderr


def test_shown_name_escapes_what_does_not_print():
    from models.schema.errors import shown_name

    assert shown_name("us-east") == "us-east"
    assert shown_name("eu west") == "eu west"  # a space inside prints
    assert shown_name("us-east\t") == "'us-east\\t'"
    assert shown_name(" us-east") == "' us-east'"
    assert shown_name("a\nb") == "'a\\nb'"


def test_a_sweep_points_label_escapes_a_tab():
    """A grid axis `regions[0].name: ["us-east\\t", us-east]` labelled its first point
    'regions[0].name=us-east       ' in the progress lines and the table: two points that
    read alike. A text value that does not print as itself is shown escaped."""
    from models.schema.sweep_grid import Point

    point = Point(0, (("regions[0].name", "us-east\t"), ("demand_growth", 1.5)))
    assert point.label == "regions[0].name='us-east\\t', demand_growth=1.5"
    assert Point(1, (("regions[0].name", "us-east"),)).label == "regions[0].name=us-east"


# --- a plan without the months its instance plans ----------------------------------------------


def test_a_plan_without_the_months_of_its_horizon_fails_the_verifier():
    """growth-horizon plans 12 months of chat growing 6% a month (month 11 at 1.06^11 =
    1.90x today's demand); its plan solved without the horizon (`--set
    policy.horizon_months=null`: today's hours only) verified 'ok' against it, and
    `report --plan` drew it as the horizon's plan. A plan stating no months fails where
    the instance plans some, naming both."""
    from models.io.loading import load_instance
    from solver.plan.schema import Plan
    from solver.verify.hours import verify_any
    from tests.paths import INSTANCES

    instance = load_instance(INSTANCES / "growth-horizon.yaml")
    assert instance.policy.horizon_months == 12
    check = verify_any(instance, Plan(instance="growth-horizon"))
    assert not check.ok
    assert any(
        v.requirement == "months" and "plans 12 months" in v.message for v in check.violations
    ), check.violations
