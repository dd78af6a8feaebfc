"""Co-location over the day and the months (tests/fixtures/colocation-3-months.yaml: three
small workloads sharing H100s on one diurnal profile, 10 periods a day, growing 10% a
month over 3 months): the run ends with a verified plan within its 60 s limit, and every
period's templates, built from what the builds before it learnt of the groups' loads
(models.colocation.load_edge), are those a build of its own gives. Before, the run
stopped in its template builds at the limit (exit 4, 61 of 64 s building groups). It
solves in seconds, past the suite's one-second rule: run by `make bench`."""

import json
import time

from models.io.loading import load_instance
from models.operations.time_demand import hour_instance
from solver.candidates.table import build_candidates
from solver.colocation.templates import TemplateMemo, all_templates
from solver.time.periods import day_periods, interactive_table
from tests.paths import REPO

FIXTURE = REPO / "tests" / "fixtures" / "colocation-3-months.yaml"
MONTHS = 3


def test_the_three_month_colocated_instance_ends_with_a_verified_plan(run_cli, tmp_path):
    out = tmp_path / "plan.json"
    started = time.monotonic()
    result = run_cli("solve", FIXTURE, "--json", out)
    took_s = time.monotonic() - started
    assert result.exit_code == 0, result.stderr
    plan = json.loads(out.read_text())
    assert len(plan["months"]) == MONTHS
    assert any(pool.get("members") for pool in plan["replicas"])  # a shared group chosen
    assert run_cli("verify", FIXTURE, out).exit_code == 0
    print(f"\ncolocation-3-months: exit 0 in {took_s:.1f} s (limit 60 s)")


def test_every_period_gets_the_templates_of_a_build_of_its_own():
    instance = load_instance(FIXTURE)
    table = interactive_table(instance, build_candidates(instance))
    memo = TemplateMemo(table)
    for period in day_periods(instance):
        hour = hour_instance(instance, period.values)
        shared = memo.templates(hour)
        alone = all_templates(hour, table)
        assert shared.templates == alone.templates  # every float as computed
        assert shared.templates
