"""compare's ledger says whose prefill share it shows when it judges two plans of months
over their horizon: month 0's (a later month's plan carries no cost split), where its
note listed every other row read over the months and left this one to be read so too
(left alone at the last stop as 'compare's prefill share of cost reads month 0')."""

from cli.compare import comparison_report
from solver.analysis.compare import Comparison, Side


def _side(name: str, horizon_cost: float) -> Side:
    return Side(
        instance=name,
        status="solved",
        cost_per_month=100.0,
        horizon_cost=horizon_cost,
        horizon_months=4,
        prefill_share=0.58,
    )


def test_the_ledger_of_a_horizon_names_month_0_s_prefill_share():
    result = Comparison(
        decision="reject", reasons=("x",), base=_side("a", 400.0), candidate=_side("b", 420.0)
    )
    (ledger,) = [t for t in comparison_report(result).tables if t.title == "Ledger"]
    assert ledger.note.startswith("judged over the 4-month horizon")
    assert "prefill share month 0's" in ledger.note
    row = next(r for r in ledger.rows if r[0] == "prefill share of cost")
    assert row[1:] == ("58%", "58%")


def test_the_ledger_of_two_horizons_says_it_reads_month_0():
    """A 4-month plan against a 6-month one is judged per month on month 0 (every row but
    the horizon's cost): the note names both horizons, where it said nothing."""
    six = _side("b", 600.0).model_copy(update={"horizon_months": 6})
    result = Comparison(decision="reject", reasons=("x",), base=_side("a", 400.0), candidate=six)
    (ledger,) = [t for t in comparison_report(result).tables if t.title == "Ledger"]
    assert "the horizons differ (the base plans 4 months, the candidate 6 months)" in ledger.note
    assert "month 0's" in ledger.note
