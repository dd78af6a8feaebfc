"""`report` on a plan with a co-located group (several workloads on one replica's GPUs).

The per-configuration charts looked the group's name (`chat+code`) up as a workload and
crashed (`StopIteration`, exit 70: `report instances/zipf-20-models.yaml`). A group has
no single model to draw: its entry is a note naming the members, and the dedicated
pools keep their charts.
"""

import json

from solver.analysis.report_data import chart_data
from solver.solve import solve
from tests.models.colocation.test_colocation import _dedicated_rps
from tests.solver.colocation.test_colocation_program import _instance


def _two_small_data() -> dict:
    tenth = _dedicated_rps() / 10
    return _instance({"chat": tenth, "code": tenth}).model_dump(mode="json", exclude_unset=True)


def test_a_co_located_group_is_a_note_and_the_report_is_written(run_cli, tmp_path):
    tenth = _dedicated_rps() / 10
    instance = _instance({"chat": tenth, "code": tenth})
    plan = solve(instance)
    groups = [pool for pool in plan.replicas if len(pool.workloads) > 1]
    assert groups, "the hand case of test_colocation_program shares one GPU"
    charts = chart_data(instance, plan)
    distinct = {(pool.workload, pool.key) for pool in plan.replicas}
    assert len(charts) == len(distinct)
    (note,) = [c for c in charts if c.note.startswith("co-located")]
    assert note.roofline == [] and note.peak_flops_per_s == 0.0
    assert "chat, code" in note.note

    file = tmp_path / "two-small.json"
    file.write_text(json.dumps(_two_small_data()))
    out = tmp_path / "report.html"
    result = run_cli("report", file, "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert "co-located: chat, code share each replica" in text
