"""Hostile input, round twelve: plans and results files edited by hand. Each case below
ended in an internal error (exit 70), or was accepted and shown as the plan's own; each
now names the field it cannot take."""

import json

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


@pytest.fixture(scope="module")
def months_plan(tmp_path_factory):
    """A two-month hourly plan of one 8B workload in one region (a day of 8 quiet, 8 busy
    and 8 middling hours, a reserved price, 10% monthly growth): its instance file and
    its plan as solve writes it (half a second of solving)."""
    from models.io.loading import load_instance
    from solver.solve import solve

    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    profile = [1] * 8 + [3] * 8 + [2] * 8
    data["workloads"][0]["demand"] = {
        "us-east": {"requests_per_day": 2_000_000, "hourly_profile": profile}
    }
    data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"] = 1.5
    data["policy"].update(horizon_months=2, monthly_growth=0.1)
    path = tmp_path_factory.mktemp("months") / "months.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    plan = json.loads(solve(load_instance(path)).model_dump_json())
    return path, plan


def _edited(months_plan, tmp_path, edit):
    instance, plan = months_plan
    plan = json.loads(json.dumps(plan))
    edit(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return instance, path


# --- an hourly plan naming a region the instance lacks ----------------------------------


def _region(where):
    def edit(plan):
        where(plan)["region"] = "us-eats"

    return edit


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_region(lambda p: p["hours"][5]["pools"][0]), "hours[5].pools[0].region"),
        (_region(lambda p: p["committed"][0]), "committed[0].region"),
        (_region(lambda p: p["months"][1]["hours"][5]["pools"][0]),
         "months[1].hours[5].pools[0].region"),
        (_region(lambda p: p["months"][1]["committed"][0]), "months[1].committed[0].region"),
        (_region(lambda p: p["months"][1]["offers"][0]), "months[1].offers[0].region"),
    ],
    ids=["hour-pool", "commitment", "month-hour-pool", "month-commitment", "month-offer"],
)  # fmt: skip
@pytest.mark.parametrize("command", ["verify", "simulate", "deploy"])
def test_an_hourly_plan_naming_an_unknown_region_is_a_violation(
    run_cli, tmp_path, months_plan, edit, field, command
):
    """Each was `internal error: StopIteration`, exit 70 (Instance.region of a name it
    lacks, in the hour verifier's arithmetic); now a violation naming the field, with the
    name the instance spells alike, before any arithmetic."""
    instance, path = _edited(months_plan, tmp_path, edit)
    args = {
        "verify": ("verify", instance, path),
        "simulate": ("simulate", instance, path, "--no-tolerance"),
        "deploy": ("deploy", path, "--instance", instance, "--target", "k8s",
                   "--out", tmp_path / "out"),
    }[command]  # fmt: skip
    needle = f"{field}: unknown region 'us-eats'; did you mean 'us-east'?"
    run_checked(run_cli, *args, code=1, needles=(needle,))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm", "llm-d", "dynamo"])
def test_deploying_an_hourly_plan_for_an_engine_says_its_schedule_is_left_out(
    run_cli, tmp_path, months_plan, target
):
    """An hourly plan deployed for an engine wrote each pool at its largest count of the
    day (2 replicas in the 8 busy hours, 1 in the rest) with no word that the hours, what
    runs reserved and what is rented, were left out: only --target k8s writes them."""
    instance, path = _edited(months_plan, tmp_path, lambda p: None)
    args = ("deploy", path, "--instance", instance, "--out", tmp_path / "out")
    result = run_checked(run_cli, *args, "--target", target, code=0)
    assert "its largest count of the day" in result.stderr
    assert "--target k8s writes the schedule" in result.stderr
    kubernetes = run_checked(run_cli, *args[:-1], tmp_path / "k8s", "--target", "k8s", code=0)
    assert "largest count of the day" not in kubernetes.stderr


def test_a_later_month_beyond_the_supply_is_named_in_the_diagnosis(run_cli, months_plan):
    """Month 1 at 100% monthly growth: the busy hours' 2,000,000 / 86,400 x 3 x 24 / 48 =
    34.7 requests/s doubled to 69.4, beyond 2 GPUs' ~68 (2 x 34.1); the diagnosis read
    'demand us-east 69.4 ... = 69.4 requests/s of chat', twice what the instance states,
    naming no month."""
    instance, _ = months_plan
    sets = ("policy.monthly_growth=1.0", "policy.buy_unit=gpu",
            "regions[us-east].supply.h100-sxm.max_gpus=2")  # fmt: skip
    args = [arg for text in sets for arg in ("--set", text)]
    needle = (
        "capacity[none,chat]: month 1 of the horizon (demand x2.000): none: demand us-east 69.4"
    )
    run_checked(run_cli, "solve", instance, *args, code=3, needles=(needle,))


# --- a month's status ---------------------------------------------------------------------


def test_a_month_stating_a_status_no_solve_writes_is_refused(run_cli, tmp_path, months_plan):
    """Month 1 stating status 'happy' verified ok and the months table read 'gap 0.00%'
    for it (a plan's own status was held to the words a solve writes; a month's was
    not). An empty status, a plan written before months stated one, still reads."""
    instance, path = _edited(months_plan, tmp_path, lambda p: p["months"][1].update(status="happy"))
    needle = "months[1].status: must be 'optimal', 'feasible (gap X%)' or 'given'"
    run_checked(run_cli, "verify", instance, path, needles=(needle,))
    instance, path = _edited(months_plan, tmp_path, lambda p: p["months"][1].update(status=""))
    run_checked(run_cli, "verify", instance, path, code=0)


# --- a month's offer: the figures the months table shows ---------------------------------


def _offer(**figures):
    def edit(plan):
        plan["months"][1]["offers"][0].update(figures)

    return edit


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        # month 1's hours rent nothing on demand: 0 GPU-hours, not -5
        (_offer(on_demand_gpu_hours=-5.0),
         "states -5 on-demand GPU-hours; its hours rent 0"),
        # its busiest hour (the 8 busy ones) runs 2 replicas of 1 GPU: 2, not 99
        (_offer(peak_need_gpus=99.0), "states a peak need of 99 GPUs; its busiest hour uses 2"),
        # 8 committed in month 0 and in month 1: none bought in month 1
        (_offer(bought_gpus=8.0), "states 8 GPUs bought; its commitment adds 0"),
        (_offer(order_month=99), "states order month 99 for no GPU bought"),
    ],
    ids=["on-demand-hours", "peak-need", "bought", "order-month"],
)  # fmt: skip
def test_a_month_offer_figure_the_months_table_shows_is_recomputed(
    run_cli, tmp_path, months_plan, edit, needle
):
    """Each verified ok and the months table showed it as the plan's (-5 on-demand
    GPU-hours, a peak of 99 GPUs): the verifier held an offer's cost, commitment, owned
    and ordered GPUs to its hours, not the rest."""
    instance, path = _edited(months_plan, tmp_path, edit)
    plan = json.loads(path.read_text())
    assert plan["months"][1]["offers"][0]["committed_gpus"] == 8.0  # as the comments say
    assert plan["months"][0]["offers"][0]["committed_gpus"] == 8.0
    run_checked(run_cli, "verify", instance, path, code=1,
                needles=(f"month[1,us-east,h100-sxm]: {needle}",))  # fmt: skip


def test_an_hour_stating_more_reserved_gpus_in_use_than_it_uses_is_a_violation(
    run_cli, tmp_path, months_plan
):
    """Hour 0 runs 1 GPU, reserved (8 committed, none owned, none on spot): stating 4
    reserved GPUs in use verified ok and the hours table showed 4 reserved of 1 used. At
    most used - owned - spot = 1 - 0 - 0 = 1 can be reserved ones in use."""
    _, plan = months_plan
    row = plan["hours"][0]["gpus"][0]
    assert (row["used"], row["existing"], row["spot"], row["reserved"]) == (1, 0, 0.0, 1.0)
    instance, path = _edited(
        months_plan, tmp_path, lambda p: p["hours"][0]["gpus"][0].update(reserved=4.0)
    )
    needle = "hours[0].gpus[0].reserved: states 4.0; reserved h100-sxm in us-east in use can "
    needle += "be at most 1"
    run_checked(run_cli, "verify", instance, path, code=1, needles=(needle,))


# --- a dedicated pool stating a shared group's fields ------------------------------------

POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8",
        "tp": 1, "pp": 1, "count": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"workloads": ["ghost"]},
         "replicas[0]: workloads ['ghost'] on a pool of 'chat' alone"),
        ({"workloads": ["chat", "ghost"]},
         "replicas[0]: workloads ['chat', 'ghost'] on a pool of 'chat' alone"),
        ({"shared_engine": True},
         "replicas[0]: shared_engine on a pool of 'chat' alone"),
        ({"swapped_weights": True},
         "replicas[0]: swapped_weights on a pool of 'chat' alone"),
    ],
    ids=["another-workload", "one-more-workload", "shared-engine", "swapped-weights"],
)  # fmt: skip
@pytest.mark.parametrize("command", ["verify", "deploy"])
def test_a_dedicated_pool_stating_a_group_field_is_refused(run_cli, tmp_path, fields, needle,
                                                          command):  # fmt: skip
    """A pool with no members is one workload's: one stating it serves 'ghost' too, or
    through one shared engine, or with its weights swapped in, verified ok and deployed
    as a plain pool of chat, the field dropped without a word."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"replicas": [{**POOL, **fields}]}))
    args = {
        "verify": ("verify", ONE_MODEL_ONE_REGION, path),
        "deploy": ("deploy", path, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm",
                   "--out", tmp_path / "out"),
    }[command]  # fmt: skip
    run_checked(run_cli, *args, needles=(needle,))
    assert not (tmp_path / "out").exists()


def test_a_dedicated_pool_stating_its_own_workload_still_reads(run_cli, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"replicas": [{**POOL, "workloads": ["chat"]}, {**POOL}]}))
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, code=None)
    assert "workloads" not in result.stderr


# --- the demand and headroom a plan says it was planned for -------------------------------


@pytest.fixture(scope="module")
def one_region_plan():
    """The one-region instance's plan as solve writes it (at demand_growth 1 and
    max_utilization 1, the instance's)."""
    from models.io.loading import load_instance
    from solver.solve import solve

    return json.loads(solve(load_instance(ONE_MODEL_ONE_REGION)).model_dump_json())


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("demand_growth", 2.5, "demand_growth: states 2.5; the instance plans for 1x today's "
                               "demand (demand_growth)"),
        ("max_utilization", 0.5, "max_utilization: states 0.5; the instance's "
                                 "policy.max_utilization is 1"),
    ],
    ids=["demand-growth", "max-utilization"],
)  # fmt: skip
def test_a_plan_stating_another_growth_or_headroom_than_the_instance_is_a_violation(
    run_cli, tmp_path, one_region_plan, field, value, needle
):
    """The plan stating 2.5 (or 0.5) verified ok, judged at the instance's 1, and solve's
    and report's text read 'planned for 2.5x today's demand' for it."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**one_region_plan, field: value}))
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, code=1, needles=(needle,))


def test_a_plan_stating_another_engine_profile_is_a_violation(run_cli, tmp_path, one_region_plan):
    """A plan stating it was solved on sglang-0.5's efficiency factors verified ok against
    the instance's trtllm-0.20 (the default), and report named sglang-0.5 as the plan's;
    its capacities are another engine's. A plan stating none (by hand) is judged as is."""
    assert one_region_plan["engine"] == "trtllm-0.20"  # the instance states no engine
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**one_region_plan, "engine": "sglang-0.5"}))
    needle = "engine: states 'sglang-0.5'; the instance's engine profile is 'trtllm-0.20'"
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, code=1, needles=(needle,))
    path.write_text(json.dumps({**one_region_plan, "engine": ""}))
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, code=0)


def test_a_fleet_stating_no_growth_is_judged_at_the_instances(run_cli, tmp_path):
    """A fleet of replicas only states neither: judged at the instance's demand_growth
    (20 requests/s x 1.5 = 30 on one replica of ~32: it serves), no violation of its own."""
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"replicas": [POOL]}))
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path,
                         "--set", "policy.demand_growth=1.5", code=None)  # fmt: skip
    assert "demand_growth" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        # one DGX H100 bought: 8 GPUs x 700 W x 10.2 kW / (8 x 700 W) = 10.2 kW
        ("kw", 99.0, "power_kw[0].kw: states 99.0; the GPUs installed give 10.2"),
        # the instance states no power cap, nor racks
        ("limit_kw", 500.0, "power_kw[0].limit_kw: states 500.0; the GPUs installed give None"),
        ("racks", 3.0, "power_kw[0].racks: states 3.0; the GPUs installed give None"),
    ],
    ids=["kw", "limit-kw", "racks"],
)  # fmt: skip
def test_a_static_plans_power_row_is_recomputed(
    run_cli, tmp_path, one_region_plan, field, value, needle
):
    """A static plan's power rows verified ok whatever they stated (an hourly plan's were
    held to its hours); report shows them per region."""
    plan = json.loads(json.dumps(one_region_plan))
    plan["power_kw"][0][field] = value
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, code=1, needles=(needle,))


@pytest.mark.parametrize("command", ["deploy", "report", "simulate"])
def test_a_plan_of_another_instance_is_named_as_verify_names_it(
    run_cli, tmp_path, one_region_plan, command
):
    """verify warns that a plan solved for 'some-other' is judged as this instance's;
    deploy, report and simulate acted on it without a word (require_verified's text said
    another instance's plan was refused). They warn alike and act on the verdict."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**one_region_plan, "instance": "some-other"}))
    args = {
        "deploy": ("deploy", path, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm",
                   "--out", tmp_path / "out"),
        "report": ("report", ONE_MODEL_ONE_REGION, "--plan", path, "-o", tmp_path / "r.html"),
        "simulate": ("simulate", ONE_MODEL_ONE_REGION, path, "--no-tolerance",
                     "--duration-s", "6"),
    }[command]  # fmt: skip
    needle = f"warning: {path} is a plan of instance 'some-other', checked here against "
    run_checked(run_cli, *args, code=0, needles=(needle + "'one-model-one-region'",))


def test_fleet_import_of_a_folder_holding_a_manifest_twice_is_refused(
    run_cli, tmp_path, one_region_plan
):
    """deploy's manifest saved twice in the folder read back (a.yaml and b.yaml): one
    Deployment of 1 replica of 1 GPU, read as 2 replicas, existing raised to 2 GPUs."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(one_region_plan))
    deployed = tmp_path / "deployed"
    run_checked(run_cli, "deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "k8s",
                "--out", deployed, code=0)  # fmt: skip
    (manifest,) = deployed.glob("*.yaml")
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "a.yaml").write_bytes(manifest.read_bytes())
    (folder / "b.yaml").write_bytes(manifest.read_bytes())
    out = tmp_path / "inst.yaml"
    needle = f"{folder / 'b.yaml'}: document 0 (Deployment {manifest.stem}): given before as "
    needle += f"{folder / 'a.yaml'} document 0"
    args = ("--instance", ONE_MODEL_ONE_REGION, "--instance-out", out)
    run_checked(run_cli, "fleet-import", folder, *args, needles=(needle,))
    assert not out.exists()


# --- simulate: two lengths of one run -------------------------------------------------------


def test_simulate_refuses_minutes_beside_the_seconds_that_replace_them(run_cli, tmp_path):
    """`--minutes 2 --duration-s 30` replayed 30 s and dropped the 2 minutes without a
    word (the help said --duration-s overrides --minutes); each alone still runs."""
    from models.io.loading import load_instance
    from solver.solve import solve

    path = tmp_path / "plan.json"
    path.write_text(solve(load_instance(ONE_MODEL_ONE_REGION)).model_dump_json())
    args = ("simulate", ONE_MODEL_ONE_REGION, path, "--no-tolerance")
    needle = "--minutes: is replaced by --duration-s: give the run's length once"
    run_checked(run_cli, *args, "--minutes", "2", "--duration-s", "30", needles=(needle,))
    run_checked(run_cli, *args, "--duration-s", "6", code=0)  # 120 requests at 20/s


# --- batch: a flag that changes nothing --------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (("--strict",), "--strict: fails an instance whose input changed since its golden "
                        "was frozen, with --check: give --check or drop it"),
        (("--allow-infeasible",), "--allow-infeasible: freezes an infeasible result as "
                                  "golden, with --update: give --update or drop it"),
    ],
    ids=["strict-without-check", "allow-infeasible-without-update"],
)  # fmt: skip
def test_batch_refuses_a_flag_that_applies_only_beside_another(run_cli, tmp_path, flags, needle):
    """Each ran the folder as if it were not given, exit 0: --strict without --check
    compares with no golden, --allow-infeasible without --update freezes nothing."""
    (tmp_path / "a.yaml").write_text(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    run_checked(run_cli, "batch", tmp_path, *flags, needles=(needle,))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml"]  # no golden written


# --- sweep: a results line edited by hand ---------------------------------------------------


@pytest.fixture(scope="module")
def sweep_results(tmp_path_factory):
    """A two-point sweep of the one-region instance (10 and 20 requests/s) and its
    results file: the grid and the file's text."""
    folder = tmp_path_factory.mktemp("sweep")
    grid = folder / "grid.yaml"
    demand = "workloads[chat].demand.us-east.peak_requests_per_s"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  {demand}: [10, 20]\n")
    return grid


def _results(run_cli, grid, tmp_path):
    lines = tmp_path / "points.jsonl"
    first = run_cli("sweep", grid, "--out", lines)
    assert first.exit_code == 0, first.stderr
    return lines


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        # before: 'internal error: ValueError: Unknown format code 'f' for object of type
        # 'str'' (the cost formatted as money), exit 70
        ("cost_per_month", "cheap", "cost_per_month: must be a number, got the text 'cheap':"),
        # before: 'internal error: ValidationError: 8 validation errors for Plan', exit 70
        ("replicas", [{"x": 1}], "replicas.0.workload: Field required"),
        # before: shown as the point's cost, $-5/month, exit 0
        ("cost_per_month", -5, "cost_per_month: Input should be greater than or equal to 0"),
        # before: shown as the point's status, its plan left out of the robust choice
        ("status", "weird", "status: Input should be 'solved', 'bad_input', 'infeasible'"),
    ],
    ids=["cost-a-word", "replicas-not-pools", "cost-negative", "status-unknown"],
)  # fmt: skip
def test_a_results_line_of_the_wrong_shape_is_refused_naming_it(
    run_cli, tmp_path, sweep_results, field, value, needle
):
    lines = _results(run_cli, sweep_results, tmp_path)
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    records[0][field] = value
    lines.write_text("".join(json.dumps(record) + "\n" for record in records))
    before = lines.read_bytes()
    result = run_cli("sweep", sweep_results, "--out", lines)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{lines}:1: {needle}" in result.stderr, result.stderr
    assert "delete the line to solve its point again" in result.stderr
    assert lines.read_bytes() == before  # nothing appended to a file it cannot read


def test_a_key_given_twice_in_a_results_line_is_refused_naming_it(run_cli, tmp_path, sweep_results):
    """`{"cost_per_month": 0, ..., "cost_per_month": 31536}`: JSON keeps the last value,
    so an edit that added a key beside the sweep's own was read without a word."""
    lines = _results(run_cli, sweep_results, tmp_path)
    first, *rest = lines.read_text().splitlines(keepends=True)
    twice = first.rstrip("\n").removesuffix("}") + ', "cost_per_month": 1}\n'
    lines.write_text(twice + "".join(rest))
    before = lines.read_bytes()
    result = run_cli("sweep", sweep_results, "--out", lines)
    assert result.exit_code == 2, result.stderr
    assert f"{lines}:1: cost_per_month: is given twice in the line" in result.stderr
    assert lines.read_bytes() == before


def test_a_grid_given_as_an_instance_is_named_a_grid(run_cli, tmp_path):
    """A grid whose `instance:` names the grid itself (or `solve grid.yaml`) read
    'unknown key axes' and 'workloads: required field is missing': now the file is named
    for what it is."""
    grid = tmp_path / "grid.yaml"
    grid.write_text("instance: grid.yaml\naxes:\n  policy.hours_per_month: [730]\n")
    for args in (("sweep", grid), ("solve", grid)):
        result = run_cli(*args)
        assert result.exit_code == 2, result.stderr
        assert "is a sweep grid (it has axes and no workloads), not an instance" in result.stderr
        assert "unknown key 'axes'" not in result.stderr
