"""Levers say when their saving rests on a borrowed GPU generation or an unmeasured
regime (issue 34): the lever plan's pools with such a band, beside the saving."""

from cli.levers import lever_table, rests_on
from models.physics import catalog
from models.physics.error_bands import band_for
from solver.analysis.lever_edits import allow_gpu
from solver.analysis.lever_solve import solve_lever
from tests import synthetic


def _only(gpu: str, price: float = 2.40):
    return synthetic.instance(
        {"us": {gpu: (64, price)}}, [synthetic.workload("chat", {"us": 12.0})]
    )


def test_a_lever_onto_a_borrowed_gpu_is_flagged_beside_its_saving() -> None:
    # gb200 has no calibration rows of its own (efficiency_like: b200)
    expected = band_for(None, "gb200", catalog.llm("llama-3.1-8b"))
    assert expected.uncertain
    # H100s at $40/GPU-hour: the `allow gb200` lever (catalog price) moves the fleet
    base = _only("h100-sxm", 40.0)
    lever = allow_gpu("gb200")(base)
    result = solve_lever("allow gb200", lever, 1e9, None)
    word = (expected.flag or "borrowed").upper()
    cell = f"gb200 dense {word} {expected.p10:+.0%}/{expected.p90:+.0%}"
    assert result.uncertain == (cell,)
    assert rests_on(result) == cell
    table = lever_table((result,))
    column = table.columns.index("rests on")
    assert table.rows[0][column] == cell
    assert column == table.columns.index("saving $/month") + 1


def test_a_lever_on_measured_gpus_says_measured() -> None:
    on_h100 = solve_lever("only h100", _only("h100-sxm"), 1e9, None)
    assert on_h100.uncertain == ()
    assert rests_on(on_h100) == "measured"
