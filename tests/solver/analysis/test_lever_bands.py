"""Levers say when their saving rests on a borrowed GPU generation or an unmeasured
regime (issue 34): the lever plan's pools with such a band, beside the saving."""

from cli.levers import lever_table, rests_on
from models.physics import catalog
from models.physics.error_bands import band_for
from solver.analysis.levers import allow_gpu, solve_lever
from tests import synthetic


def _only(gpu: str):
    return synthetic.instance({"us": {gpu: (64, 2.40)}}, [synthetic.workload("chat", {"us": 12.0})])


def test_a_lever_onto_a_borrowed_gpu_is_flagged_beside_its_saving() -> None:
    # gb200 has no calibration rows of its own (efficiency_like: b200)
    llm = catalog.llm("llama-3.1-8b")
    expected = band_for(None, "gb200", llm)
    assert expected.uncertain
    lever = allow_gpu("gb200")(_only("h100-sxm"))  # offered at its catalog price
    base_cost = 1e9  # any base: the flag is about the lever's own plan
    on_gb200 = solve_lever("only gb200", _only("gb200"), base_cost, None)
    word = (expected.flag or "borrowed").upper()
    cell = f"gb200 dense {word} {expected.p10:+.0%}/{expected.p90:+.0%}"
    assert on_gb200.uncertain == (cell,)
    assert rests_on(on_gb200) == cell
    table = lever_table((on_gb200,))
    row = table.rows[0]
    assert row[table.columns.index("rests on")] == cell
    assert table.columns.index("rests on") == table.columns.index("saving $/month") + 1
    assert lever is not None


def test_a_lever_on_measured_gpus_says_measured() -> None:
    on_h100 = solve_lever("only h100", _only("h100-sxm"), 1e9, None)
    assert on_h100.uncertain == ()
    assert rests_on(on_h100) == "measured"
