"""Hostile input, round nineteen: an output writes over a file only when it is empty or
fleetplan's own earlier output of the same kind (models.io.output_kinds)."""

import json

import pytest

from models.io.output_files import check_target
from models.io.output_kinds import HTML_OPENING, JSON, MARKDOWN, PLAN, PROFILE, PROGRAM
from models.schema.errors import InputError
from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

_POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8",
         "tp": 1, "pp": 1, "role": "unified", "count": 1}  # fmt: skip
PLAN_TEXT = json.dumps({"status": "optimal", "replicas": [_POOL]})
"""A plan, as far as the kinds look (`solve --json` writes more keys)."""
README = "# My project\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nfleetplan solve x.yaml\n```\n"
"""A user's README: a heading and a table, as a report has, and a code fence, as none has."""
NOTES = "notes on the fleet: ask finance about reserved prices\n"
REPORT_MD = "# chat: optimal, $1/month\n\n## GPUs\n\n| region | GPUs |\n|---|---|\n| us | 1 |\n"

_USERS = {"plan.json": PLAN_TEXT, "README.md": README, "notes.txt": NOTES}


def _files(tmp_path):
    for name, text in _USERS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    plan = tmp_path / "given.json"  # the plan the command reads, never an output here
    plan.write_text(PLAN_TEXT, encoding="utf-8")
    return plan


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (["solve", "INSTANCE", "--markdown"], "plan.json"),  # the issue's own case
        (["solve", "INSTANCE", "--json"], "README.md"),
        (["solve", "INSTANCE", "--json"], "notes.txt"),
        (["explain", "INSTANCE", "--markdown"], "README.md"),
        (["verify", "INSTANCE", "PLAN", "--json"], "plan.json"),  # a verdict over a plan
        (["simulate", "INSTANCE", "PLAN", "--markdown"], "plan.json"),
        (["simulate", "INSTANCE", "PLAN", "--json"], "notes.txt"),
        (["compare", "INSTANCE", "INSTANCE", "--json"], "plan.json"),
        (["validate", "INSTANCE", "--json"], "plan.json"),
        (["sweep", "GRID", "--json"], "plan.json"),
        (["estimate", "--requests-per-day", "1000", "--json"], "plan.json"),
        (["batch", "FOLDER", "--junit"], "notes.txt"),
        (["batch", "FOLDER", "--markdown"], "README.md"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_an_output_never_replaces_a_file_of_another_kind(run_cli, tmp_path, args, target):
    """`solve x.yaml --markdown plan.json` wrote Markdown over the plan with exit 0 (only
    instance files were protected); each output now refuses, before any work, a file
    that is not its own earlier output, naming the path and what the file holds."""
    plan = _files(tmp_path)
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  policy.survive: [none]\n")
    folder = tmp_path / "instances"
    folder.mkdir()
    (folder / "one.yaml").write_text(ONE_MODEL_ONE_REGION.read_text())
    given = {"INSTANCE": ONE_MODEL_ONE_REGION, "PLAN": plan, "GRID": grid, "FOLDER": folder}
    path = tmp_path / target
    needles = (f"{path}: exists and holds ", "not an earlier", "remove the file first")
    run_checked(run_cli, *[given.get(a, a) for a in args], path, needles=needles)
    assert {name: (tmp_path / name).read_text() for name in _USERS} == _USERS


def test_a_verdict_is_written_over_an_earlier_verdict(run_cli, tmp_path):
    """What may be replaced still is: `verify --json` over an earlier verdict (a JSON
    document, not a plan); the plan's one replica carries the fixture's 20 requests/s."""
    plan = _files(tmp_path)
    verdict = tmp_path / "verdict.json"
    verdict.write_text('{"ok": false}')
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, "--json", str(verdict), code=0)
    assert "violations" in json.loads(verdict.read_text())


@pytest.mark.parametrize(
    ("kind", "text", "replaced"),
    [
        (PLAN, PLAN_TEXT, True),
        (PLAN, '{"replicas": []}', True),  # fleet-import --plan-out's
        (PLAN, '{"status": "infeasible", "diagnosis": {}}', True),
        (PLAN, '{"ok": true, "violations": []}', False),  # a verdict is no plan
        (JSON, '{"ok": true, "violations": []}', True),
        (JSON, "[1, 2]", True),
        (JSON, PLAN_TEXT, False),
        (JSON, '{"status": "optimal", "plan": {}}', False),  # an explanation holds a plan
        (JSON, "{not json", False),
        (MARKDOWN, REPORT_MD, True),
        (MARKDOWN, README, False),
        (MARKDOWN, "# notes\n\nno table here\n", False),
        (MARKDOWN, PLAN_TEXT, False),
        (PROGRAM, "NAME        \nROWS\n N  Obj\n", True),
        (PROGRAM, "\\ File written by HiGHS .lp file handler\nmin\n", True),
        (PROGRAM, NOTES, False),
        (PROFILE, "# fleetplan engine profile, written by `fleetplan calibrate` on x.\n", True),
        (PROFILE, "kind: fleetplan-engine-profile\nprofile: mine\n", False),  # one's own
    ],
)
def test_what_each_kind_writes_over(tmp_path, kind, text, replaced):
    path = tmp_path / "out"
    path.write_text(text, encoding="utf-8")
    if replaced:
        check_target(path, kind=kind)
    else:
        with pytest.raises(InputError, match="not an earlier"):
            check_target(path, kind=kind)


def test_an_empty_file_and_the_reports_own_opening_are_replaced(tmp_path):
    """An empty file (a `touch`, a mktemp) is replaced by any kind; the report's HTML by
    a report, a page of the user's is not."""
    from models.io.output_kinds import HTML

    empty = tmp_path / "empty.html"
    empty.write_text("")
    for kind in (PLAN, JSON, MARKDOWN, PROGRAM, PROFILE, HTML):
        check_target(empty, kind=kind)
    page = tmp_path / "page.html"
    page.write_text(HTML_OPENING + "fleet</title>")
    check_target(page, kind=HTML)
    page.write_text("<!DOCTYPE html>\n<html><body>my page</body></html>\n")
    with pytest.raises(InputError, match="not an earlier HTML report"):
        check_target(page, kind=HTML)


def test_fleet_import_writes_an_instance_over_an_instance_only(run_cli, tmp_path):
    """`fleet-import --instance-out notes.yaml` wrote the instance over any file but a
    file the instance reads; an existing file must now be an instance."""
    notes = tmp_path / "notes.yaml"
    notes.write_text("todo: [ask finance]\n")
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(
        "workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h100-sxm,fp8,1,1,2\n"
    )
    needles = (f"{notes}: exists and is not an instance file",)
    run_checked(run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                "--instance-out", notes, needles=needles)  # fmt: skip
    assert notes.read_text() == "todo: [ask finance]\n"


def test_fleet_import_replaces_its_earlier_import_and_no_other_instance(run_cli, tmp_path):
    """`--instance-out prod.yaml` wrote the imported instance over a hand-written
    instance of another name (its comments and name gone); an earlier import into the
    same instance is still replaced."""
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(
        "workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h100-sxm,fp8,1,1,2\n"
    )
    prod = tmp_path / "prod.yaml"
    prod_text = "# ours\n" + ONE_MODEL_ONE_REGION.read_text().replace(
        "name: one-model-one-region", "name: prod"
    )
    prod.write_text(prod_text)
    needles = (f"{prod}:", "holds the instance 'prod', not an earlier import into "
               "'one-model-one-region'")  # fmt: skip
    run_checked(run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                "--instance-out", prod, needles=needles)  # fmt: skip
    assert prod.read_text() == prod_text
    owned = tmp_path / "owned.yaml"
    for _ in range(2):  # the second run replaces the first's output
        run_checked(run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
                    "--instance-out", str(owned), code=0)  # fmt: skip
    assert "existing" in owned.read_text()


# --- a binding row's period, worded without Python's None --------------------------------


def test_a_row_name_without_its_period_mark_is_said_in_words():
    """A plan's binding row renamed by hand (`ü名前`, fuzzed from a growth-horizon plan)
    failed verify with 'states period 18; its name says None': the name carries no
    `@tHH` mark, and the message now says so."""
    from solver.plan.binding import Binding
    from solver.verify.hour_rows import _rows

    row = Binding(name="demand[chat]", family="demand", slack=0, shadow_price=0, period=18)
    (found,) = _rows("binding", (row,), (), None)
    assert found.requirement == "binding[0].period"
    assert "states period 18; its name says no period" in found.message
    assert "None" not in found.message
    row = Binding(name="demand[chat]", family="demand", slack=0, shadow_price=0)
    (found,) = _rows("months[3].binding", (row,), (), 3)  # a month's row stating none
    assert "states no month; it is a row of month 3" in found.message


@pytest.mark.parametrize(
    ("found", "requirement", "said"),
    [
        # growth-horizon's months[5].month edited to 99 (fuzzed): months 0 .. 11 in order
        (
            [0, 1, 2, 3, 4, 99, 6, 7, 8, 9, 10, 11],
            "months[5].month",
            "states month 99 where month 5",
        ),
        ([*range(12), 3], "months[12].month", "states month 3, past the horizon"),  # a copy
        ([0], "months", "states 1 month; the plan needs months 0 .. 11"),
    ],
)
def test_a_month_out_of_its_place_is_named_by_its_field(found, requirement, said):
    """It read 'needs months 0 .. horizon_months - 1 once each in order (horizon_months
    12); got 12 months starting [0, 1, 2]', the month edited nowhere in sight."""
    from solver.verify.months import _out_of_order

    violation = _out_of_order(found, 12)
    assert violation.requirement == requirement
    assert said in violation.message


# --- a sweep's two-axis matrix over list values -------------------------------------------


def test_a_two_axis_matrix_takes_list_values():
    """A grid over a whole `hourly_profile` (a list) and `policy.horizon_months` solved
    its points, then exited 70 ('unhashable type: list') drawing the matrix: its rows and
    columns were `dict.fromkeys` of the axis values. Two profiles x one horizon: two rows,
    each point's horizon cost in its cell ($100 and $250 as stated)."""
    from pathlib import Path

    from cli.sweep import _matrix
    from models.schema.sweep_grid import Grid, Point

    flat, peaked = [1] * 24, [1] * 12 + [2] * 12
    axes = ("workloads[0].demand.us-east.hourly_profile", "policy.horizon_months")
    points = tuple(
        Point(index, ((axes[0], profile), (axes[1], 2)))
        for index, profile in enumerate((flat, peaked))
    )
    grid = Grid(Path("g.yaml"), Path("i.yaml"), {}, points, axes)
    (table,) = _matrix(grid, {0: {"horizon_cost": 100.0}, 1: {"horizon_cost": 250.0}})
    assert [row[1] for row in table.rows] == ["$100", "$250"]
    assert table.columns == ("hourly_profile", "2")


# --- a month's offer of a GPU the instance lacks ------------------------------------------


def test_a_timed_record_of_an_unknown_gpu_is_named_before_any_arithmetic():
    """procurement-3region's plan with months[1].offers[0].gpu edited to 'h999' (fuzzed)
    ended verify with exit 70 (KeyError: 'h999', a server size looked up); a commitment's
    'h999' gave 57 violations about reserved GPUs in use. Each is now one violation naming
    the field, as an unknown region is, and nothing is recomputed."""
    from models.io.loading import load_instance
    from solver.plan.schema import Plan
    from solver.verify.hour_figures import unknown_names
    from tests.paths import INSTANCES

    instance = load_instance(INSTANCES / "procurement-3region.yaml")
    offer = {"region": "us-east", "gpu": "h999", "peak_need_gpus": 0, "committed_gpus": 0,
             "ordered_gpus": 0, "on_demand_gpu_hours": 0, "cost": 0, "owned_gpus": 0,
             "bought_gpus": 0}  # fmt: skip
    month = {"month": 1, "growth_factor": 1.05, "cost_per_month": 0, "offers": [offer]}
    plan = Plan.model_validate({"replicas": [], "months": [month]})
    (found,) = unknown_names(instance, plan)
    assert found.requirement == "months[0].offers[0].gpu"
    assert found.message.startswith("unknown GPU 'h999'")


def test_a_server_row_of_no_offer_is_said_in_words():
    """procurement-3region's servers[0].gpu edited to 'h999' read 'servers: states None;
    us-east h100-sxm: (servers, GPUs each) bought are (6, 8)' and '... bought are None'.
    48 h100-sxm bought in 8-GPU servers are 6 servers (48 // 8) the plan has no row of."""
    from models.io.loading import load_instance
    from solver.plan.schema import Plan
    from solver.verify.hour_figures import _site_rows
    from tests.paths import INSTANCES

    instance = load_instance(INSTANCES / "procurement-3region.yaml")
    gpus = [{"region": "us-east", "gpu": "h100-sxm", "used": 45, "existing": 0,
             "purchased": 48, "available": 512, "price_per_gpu_hour": 2.4,
             "cost_per_month": 0}]  # fmt: skip
    servers = [{"region": "us-east", "gpu": "h999", "count": 6, "gpus_per_server": 8}]
    plan = Plan.model_validate({"replicas": [], "gpus": gpus, "servers": servers})
    messages = {v.requirement: v.message for v in _site_rows(instance, plan)}
    assert messages["servers"].startswith("states no row; us-east h100-sxm")
    assert messages["servers"].endswith("bought are (6, 8)")
    assert messages["servers[0]"].endswith("us-east h999: (servers, GPUs each) bought are none")
