"""`fleetplan batch`: solving a folder, comparing with golden files, updating them only
when asked, and naming what changed."""

import json
import shutil

import pytest

from solver.studies.batch import (
    Golden,
    Outcome,
    Verdict,
    compare,
    golden_path,
    instance_files,
    write_golden,
)
from solver.studies.fingerprint import Fingerprint
from tests.paths import INSTANCES

SMALL = "region-loss-3-baseline.yaml"


def _outcome(**changes) -> Outcome:
    fields = {
        "file": "x.yaml",
        "instance": "x",
        "status": "solved",
        "cost_per_month": 10_000.0,
        "total_gpus": 8,
        "gpus": {"h100-sxm": {"us-east": 8}},
        "binding_families": ("capacity", "demand"),
        "verified": True,
    }
    fields.update(changes)
    return Outcome(**fields)


def test_identical_outcome_has_no_regression():
    outcome = _outcome()
    assert compare(outcome, Golden.of(outcome)).ok


def test_cost_change_beyond_tolerance_is_named():
    golden = Golden.of(_outcome())  # tolerance 0.5% of $10,000 = $50
    within = compare(_outcome(cost_per_month=10_040.0), golden)
    beyond = compare(_outcome(cost_per_month=10_100.0), golden)
    assert within.ok
    (line,) = beyond.regressions
    assert "$10,000.00 -> $10,100.00" in line and "+1.00%" in line


def test_a_cheaper_verified_plan_is_an_improvement_not_a_regression():
    golden = Golden.of(_outcome())  # tolerance 0.5% of $10,000 = $50
    cheaper = compare(_outcome(cost_per_month=9_900.0), golden)
    assert cheaper.ok and not cheaper.regressions
    (line,) = cheaper.improvements
    assert "$10,000.00 -> $9,900.00" in line and "-1.00%" in line
    # ... but a cheaper plan the verifier refuses is no improvement
    refused = compare(_outcome(cost_per_month=9_900.0, verified=False, message="short"), golden)
    assert not refused.ok and not refused.improvements


def test_status_and_binding_family_changes_are_regressions():
    golden = Golden.of(_outcome())
    infeasible = compare(_outcome(status="infeasible", cost_per_month=None), golden)
    assert any("status solved -> infeasible" in r for r in infeasible.regressions)
    families = compare(_outcome(binding_families=("capacity", "gpu_supply")), golden)
    (line,) = families.regressions
    assert "now binding gpu_supply" in line and "no longer binding demand" in line


def test_binding_families_of_a_plan_without_shadow_prices_are_not_compared():
    # The time limit skipped pricing on one side (sweep26: an hourly 3 x 3 at --time-limit 5
    # frozen unpriced with [] read "binding families changed" against the same $19,651.60
    # plan priced): which families bind is not known there, so nothing is compared.
    priced = _outcome()
    unpriced = _outcome(binding_families=None)
    assert compare(unpriced, Golden.of(priced)).ok
    frozen_unpriced = Golden.of(unpriced)
    assert frozen_unpriced.binding_families is None
    assert compare(priced, frozen_unpriced).verdict is Verdict.OK
    # both priced: still compared
    assert not compare(_outcome(binding_families=("capacity",)), Golden.of(priced)).ok


def test_every_unpriced_note_says_so_and_the_plan_reads_unpriced():
    from solver.plan.schema import NO_SHADOW_PRICES, SHADOW_PRICE_NOTE, Plan
    from solver.solve import PRICING_TIMED_OUT
    from solver.time.readback.prices import PRICED_NOTE, UNPRICED_NOTE

    for note in (PRICING_TIMED_OUT, UNPRICED_NOTE.format("time_limit")):
        assert NO_SHADOW_PRICES in note
    for note in (SHADOW_PRICE_NOTE, PRICED_NOTE, ""):
        assert NO_SHADOW_PRICES not in note
    assert not Plan.model_construct(shadow_price_note=PRICING_TIMED_OUT).priced
    assert Plan.model_construct(shadow_price_note=SHADOW_PRICE_NOTE).priced


def test_gpu_moves_at_equal_cost_are_notes_not_regressions():
    golden = Golden.of(_outcome())
    moved = compare(_outcome(gpus={"h100-sxm": {"us-west": 8}}), golden)
    assert moved.ok
    assert "h100-sxm in us-east: 8 -> 0 GPUs" in moved.notes


def test_unverified_plan_and_missing_golden_are_regressions():
    assert not compare(_outcome(verified=False, message="capacity short"), Golden.of(_outcome())).ok
    assert "no golden file" in compare(_outcome(), None).regressions[0]


def test_every_instance_has_a_golden_file():
    files = instance_files(INSTANCES)
    assert files, f"no instance files in {INSTANCES}"
    for path in files:
        assert golden_path(path).exists(), f"{path.name} has no golden result"


@pytest.fixture
def small_folder(tmp_path):
    folder = tmp_path / "instances"
    folder.mkdir()
    shutil.copy(INSTANCES / SMALL, folder / SMALL)
    shutil.copy(golden_path(INSTANCES / SMALL), golden_path(folder / SMALL))
    return folder


def test_check_passes_on_the_frozen_golden(run_cli, small_folder, tmp_path):
    summary = tmp_path / "summary.md"
    result = run_cli("batch", small_folder, "--check", "--markdown", summary)
    assert result.exit_code == 0, result.stderr
    assert "| region-loss-3-baseline.yaml | solved, optimal |" in summary.read_text()


def test_two_jobs_check_strict_keeps_the_folder_order_and_fails_a_moved_golden(
    run_cli, small_folder, tmp_path
):
    """`batch --check --strict --jobs 2`, as `make test` ran it on instances/ before the
    goldens were tests (tests/test_goldens.py): two instances in a pool of two worker
    processes, reported in the folder's order; the one whose golden was moved by hand
    (region-loss-2's cost cut to 1/1.1: its plan now costs 10% more) fails the run with
    exit 1 and is named, the other passes on its frozen golden."""
    other = "region-loss-2.yaml"
    shutil.copy(INSTANCES / other, small_folder / other)
    golden = json.loads(golden_path(INSTANCES / other).read_text())
    golden["cost_per_month"] /= 1.1
    golden_path(small_folder / other).write_text(json.dumps(golden))
    report = tmp_path / "batch.json"
    result = run_cli("batch", small_folder, "--check", "--strict", "--jobs", "2", "--json", report)
    assert result.exit_code == 1
    assert f"regression {other}: cost" in result.stderr and "+10.00%" in result.stderr
    records = json.loads(report.read_text())
    assert [(r["file"], r["verdict"]) for r in records] == [
        (str(small_folder / other), "fail"),
        (str(small_folder / SMALL), "pass"),
    ]


def test_a_price_change_fails_the_check_naming_instance_and_cost(run_cli, small_folder):
    path = small_folder / SMALL
    before = json.loads(golden_path(path).read_text())
    # 3.00 -> 3.30 $/GPU-hour on every GPU: the same fleet costs 10% more.
    path.write_text(
        path.read_text().replace("price_per_gpu_hour: 3.00", "price_per_gpu_hour: 3.30")
    )
    result = run_cli("batch", small_folder, "--check")
    assert result.exit_code == 1
    assert SMALL in result.stderr and "cost" in result.stderr and "+10.00%" in result.stderr
    # the golden file is untouched without --update
    assert json.loads(golden_path(path).read_text()) == before


def test_a_price_cut_passes_the_check_as_an_improvement(run_cli, small_folder, tmp_path):
    path = small_folder / SMALL
    # 3.00 -> 2.70 $/GPU-hour on every GPU: the same fleet costs 10% less.
    path.write_text(
        path.read_text().replace("price_per_gpu_hour: 3.00", "price_per_gpu_hour: 2.70")
    )
    report = tmp_path / "batch.json"
    result = run_cli("batch", small_folder, "--check", "--json", report)
    assert result.exit_code == 0, result.stderr
    assert f"improvement {SMALL}" in result.stdout and "-10.00%" in result.stdout
    (record,) = json.loads(report.read_text())
    assert record["verdict"] == "pass" and "-10.00%" in record["improvements"][0]
    # The gap the status may embed is there as a number too, the status written from it.
    gap = record["mip_gap"]
    assert isinstance(gap, float) and gap >= 0
    assert record["plan_status"] in ("optimal", f"feasible (gap {gap:.2%})")


def test_update_rewrites_the_golden_file(run_cli, small_folder):
    path = small_folder / SMALL
    path.write_text(
        path.read_text().replace("price_per_gpu_hour: 3.00", "price_per_gpu_hour: 3.30")
    )
    assert run_cli("batch", small_folder, "--update").exit_code == 0
    assert run_cli("batch", small_folder, "--check").exit_code == 0


def test_bad_instance_in_the_folder_is_reported_not_raised(run_cli, small_folder):
    (small_folder / "broken.yaml").write_text("name: [unclosed\n")
    result = run_cli("batch", small_folder)
    assert result.exit_code == 1
    assert "broken.yaml" in result.stderr and "bad input" in result.stderr


def test_write_golden_keeps_a_custom_tolerance(small_folder):
    path = small_folder / SMALL
    golden = json.loads(golden_path(path).read_text())
    golden["cost_rel_tolerance"] = 0.02
    golden_path(path).write_text(json.dumps(golden))
    write_golden(path, _outcome())
    assert json.loads(golden_path(path).read_text())["cost_rel_tolerance"] == 0.02


def test_empty_or_missing_folder_exits_2(run_cli, tmp_path):
    assert run_cli("batch", tmp_path).exit_code == 2
    missing = run_cli("batch", tmp_path / "nowhere")
    assert missing.exit_code == 2
    assert f"{tmp_path / 'nowhere'}: no such folder" in missing.stderr  # not "not a folder"


# --- CI that says what broke (issue 35) ---------------------------------------------------

PRINTED = Fingerprint(instance="1" * 16, catalog="c" * 16, version="0.1.0")


def test_each_finding_has_its_own_verdict_word():
    golden = Golden.of(_outcome(fingerprint=PRINTED))  # $10,000, tolerance $50
    found = {
        "ok": compare(_outcome(fingerprint=PRINTED), golden),
        "regression": compare(_outcome(cost_per_month=10_100.0), golden),
        "improvement": compare(_outcome(cost_per_month=9_900.0), golden),
        "bad input": compare(_outcome(status="bad_input", message="x.yaml:3: nope"), None),
        "infeasible": compare(_outcome(status="infeasible", message="no GPU fits"), golden),
        "no golden": compare(_outcome(), None),
        "input changed": compare(
            _outcome(fingerprint=PRINTED.model_copy(update={"catalog": "d" * 16})), golden
        ),
    }
    assert {word: c.verdict for word, c in found.items()} == {w: Verdict(w) for w in found}
    assert found["input changed"].ok and found["improvement"].ok
    assert found["input changed"].passes() and not found["input changed"].passes(strict=True)
    assert "catalog" in found["input changed"].input_changed


def test_bad_input_without_a_golden_is_its_parse_error_not_a_missing_golden():
    outcome = _outcome(status="bad_input", message="x.yaml:22: workloads[0].slo.tpot: unknown")
    (reason,) = compare(outcome, None).regressions
    assert reason == "bad input: x.yaml:22: workloads[0].slo.tpot: unknown"


def test_a_golden_without_a_fingerprint_is_of_unknown_input():
    golden = Golden.of(_outcome())  # as shipped before fingerprints: none recorded
    checked = compare(_outcome(fingerprint=PRINTED), golden)
    assert checked.verdict is Verdict.OK and checked.input_changed == ""
    assert checked.passes(strict=True)


def test_a_version_change_is_named_with_both_versions():
    golden = Golden.of(_outcome(fingerprint=PRINTED))
    newer = PRINTED.model_copy(update={"version": "0.2.0"})
    assert "version 0.1.0 -> 0.2.0" in compare(_outcome(fingerprint=newer), golden).input_changed


def _bad_new_instance(folder):
    """A copy of SMALL with `tpot_p99_ms` misspelt `tpot`, and no golden file."""
    text = (folder / SMALL).read_text()
    assert "tpot_p99_ms: 30" in text
    (folder / "new.yaml").write_text(text.replace("tpot_p99_ms: 30", "tpot: 30"))


def test_a_new_bad_instance_shows_its_parse_error_everywhere(run_cli, small_folder, tmp_path):
    _bad_new_instance(small_folder)
    junit, report, summary = tmp_path / "j.xml", tmp_path / "r.json", tmp_path / "s.md"
    result = run_cli(
        "batch", small_folder, "--check", "--junit", junit, "--json", report, "--markdown", summary
    )
    assert result.exit_code == 1
    said = "workloads[0].slo.tpot: unknown key 'tpot'"
    everything = result.stdout + result.stderr + junit.read_text() + summary.read_text()
    assert "no golden" not in everything and "change(s)" not in everything
    assert "bad input" in result.stdout and "workloads[0].slo.tpot" in result.stdout  # table
    assert f"bad input new.yaml: {small_folder / 'new.yaml'}:" in result.stderr
    assert said in result.stderr and said in summary.read_text()
    assert 'type="bad input"' in junit.read_text() and said in junit.read_text()
    records = {r["instance"] or r["file"]: r for r in json.loads(report.read_text())}
    bad = records[str(small_folder / "new.yaml")]
    assert bad["finding"] == "bad input" and said in bad["reasons"][0]


def test_update_refuses_an_infeasible_result_unless_allowed(run_cli, small_folder):
    path = small_folder / SMALL
    # one H100 per region serves at most 13.7 of the 60 requests/s each region sends
    path.write_text(path.read_text().replace("max_gpus: 256", "max_gpus: 1"))
    golden_path(path).unlink()
    refused = run_cli("batch", small_folder, "--update")
    assert refused.exit_code == 1
    assert "--allow-infeasible" in refused.stderr and not golden_path(path).exists()
    assert run_cli("batch", small_folder, "--update", "--allow-infeasible").exit_code == 0
    assert Golden.model_validate_json(golden_path(path).read_text()).status == "infeasible"
    assert run_cli("batch", small_folder, "--check").exit_code == 0, "infeasible as expected"


def test_golden_records_its_input_and_check_names_a_change(run_cli, small_folder):
    path = small_folder / SMALL
    assert run_cli("batch", small_folder, "--update").exit_code == 0
    frozen = Golden.model_validate_json(golden_path(path).read_text()).fingerprint
    assert frozen is not None and len(frozen.instance) == len(frozen.catalog) == 16
    # a comment is not input: nothing changed, even under --strict
    path.write_text("# a comment\n" + path.read_text())
    quiet = run_cli("batch", small_folder, "--check", "--strict")
    assert quiet.exit_code == 0 and "input changed" not in quiet.stdout + quiet.stderr
    # a new description is: the plan is the same, the check names the change
    text = path.read_text()
    path.write_text(text.replace('description: "', 'description: "Edited. ', 1))
    noted = run_cli("batch", small_folder, "--check")
    assert noted.exit_code == 0 and f"input changed {SMALL}: " in noted.stdout
    assert "instance" in noted.stdout
    strict = run_cli("batch", small_folder, "--check", "--strict")
    assert strict.exit_code == 1 and f"input changed {SMALL}: " in strict.stderr


def _horizon_instance():
    """3 months of a flat 30 requests/s day growing 10% a month (tests/solver/time/
    test_months.py's hand case)."""
    from models.io.loading import validate_instance
    from tests.solver.time.test_months import _data

    return validate_instance(_data(30.0, 0.1, 1, 3), "months.yaml")


def test_a_horizons_plan_takes_the_solves_verdict_not_a_second_verification(monkeypatch):
    """The solve verifies a horizon's plan whole as it returns it (solver.solve), so batch
    does not verify it again: with batch's own verifier made to refuse everything the
    plan still reads verified. Where the solve's verifier refuses it, the outcome is
    `rejected` (PlanRejected), so the verdict taken is the solve's."""
    from solver.studies import batch
    from solver.verify import hours
    from solver.verify.verdict import Verification, Violation

    def refusing(*_args) -> Verification:
        no = Violation(requirement="test", message="refused")
        return Verification(ok=False, violations=(no,), cost_per_month=0.0, total_gpus=0, checks=())

    inst = _horizon_instance()
    monkeypatch.setattr(batch, "verify", refusing)
    outcome = batch.solve_one("months.yaml", inst, None)
    assert (outcome.status, outcome.verified) == ("solved", True)
    monkeypatch.setattr(hours, "verify_hours", refusing)
    assert batch.solve_one("months.yaml", inst, None).status == "rejected"


def test_a_static_plan_is_verified_again_by_batch(monkeypatch):
    """A static plan is checked by batch's own verifier (the solve checks it before its
    capacity bands and summary are added): refused there, it reads unverified, with the
    violation as its message."""
    from models.io.loading import load_instance
    from solver.studies import batch
    from solver.verify.verdict import Verification, Violation

    no = Violation(requirement="test", message="refused")
    refusing = Verification(ok=False, violations=(no,), cost_per_month=0.0, total_gpus=0, checks=())
    monkeypatch.setattr(batch, "verify", lambda *_args: refusing)
    outcome = batch.solve_one(SMALL, load_instance(INSTANCES / SMALL), None)
    assert (outcome.status, outcome.verified) == ("solved", False)
    assert "refused" in outcome.message
