"""A TTFT target tighter than the engine profile's request overhead is out of reach on
every layout, and the pre-solve problem says so, naming the overhead and its profile."""

import pytest

from models.physics.efficiency import efficiency_for
from solver.errors import Infeasible
from solver.solve import solve
from tests.synthetic import instance, workload


def test_a_target_under_the_sglang_overhead_is_named_before_solving():
    """sglang-0.5 on B200 puts its fitted request overhead (87.9 ms, catalog) in every
    TTFT; a 60 ms target is below it whatever the layout."""
    overhead_s = efficiency_for("b200", "fp8", engine="sglang-0.5").request_overhead_s
    assert overhead_s > 0.060
    inst = instance(
        {"east": {"b200": (64, 5.0)}},
        [workload("chat", {"east": 5.0}, ttft_p99_ms=60)],
        tensor_parallel=[1, 2, 4, 8],
        top={"engine": "sglang-0.5"},
    )
    with pytest.raises(Infeasible) as raised:
        solve(inst)
    (problem,) = raised.value.diagnosis.problems
    assert problem.requirement == "candidates[chat]"
    assert (
        f"of which {overhead_s * 1e3:.0f} ms is the sglang-0.5 engine profile's request "
        "overhead" in problem.message
    )
    assert "target 60 ms" in problem.message
