"""A plan whose later months (or off-peak hours) run a borrowed GPU type says so wherever
it says what its numbers rest on: explain --levers' 'rests on'
(capacity_bands.uncertain_pools) and the plan's own borrowed_efficiency and
efficiency_note (solver.solve.with_engine, which the months now pass through). Both read
month 0's peak fleet alone, while the plan's horizon cost (and a lever's $/month, its
mean month) counts every month.

test_months' hand case (Llama 3.1 8B, 10.5 q growing 10% a month over 4 months: 11, 12,
13, 14 GPUs) with 12 H100s at most and MI300X (no calibration rows: borrowed) at $2.50:
month 0 runs 11 H100s, months 2 and 3 add MI300X, and the plan read 'measured',
borrowed_efficiency false."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.capacity_bands import uncertain_pools
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps


@pytest.fixture(scope="module")
def later_mi300x():
    data = _data(10.5 * _lone_rps(), 0.10, 0, 4)
    data["regions"][0]["supply"]["h100-sxm"]["max_gpus"] = 12
    data["gpus"].append({"name": "mi300x"})
    data["regions"][0]["supply"]["mi300x"] = {"max_gpus": 64, "price_per_gpu_hour": 2.5}
    plan = solve(validate_instance(data, "mi300x.yaml"))
    assert {p.gpu for p in plan.replicas} == {"h100-sxm"}  # month 0: 11 <= 12 H100s
    later = {p.gpu for m in plan.months for h in m.hours for p in h.pools if p.count}
    assert "mi300x" in later
    return plan


def test_a_borrowed_type_of_later_months_is_what_a_lever_rests_on(later_mi300x):
    (rests_on,) = [text for text in uncertain_pools(later_mi300x) if text.startswith("mi300x")]
    assert "BORROWED" in rests_on


def test_the_plan_states_its_borrowed_efficiencies_over_the_horizon(later_mi300x):
    assert later_mi300x.borrowed_efficiency
    assert "mi300x" in later_mi300x.efficiency_note


def test_the_report_s_model_error_table_has_the_later_months_type(later_mi300x):
    """The HTML report's 'Model error on held-out rows' listed the peak fleet's bands."""
    from cli.render.html_report import band_table

    table = band_table(later_mi300x)
    assert table is not None
    (row,) = [r for r in table.rows if r[0] == "mi300x"]
    assert row[7] == "BORROWED"
    assert [r[0] for r in table.rows].count("h100-sxm") >= 1
