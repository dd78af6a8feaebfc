"""An hourly plan's top-level scenarios (the terminal's utilisation table, the report's
'Utilisation by scenario', compare's utilisation) are those of its peak hour: of the
hours whose pools hold the most GPUs, the one that carries the most load, as
`simulate --month` picks a month's busiest hour.

Before: the first period with the most GPUs, whatever its load. Where the fleet is the
same all day (committed GPUs run their replicas in the trough too) that is hour 0: on
an 8B chat at 1x its rate for 12 hours and 1.5x for 12, beside two adapters' group, the
plan's scenarios and `simulate`'s 'peak hour' showed 00:00 UTC at the trough's load."""

from solver.simulate.hours import replayed_hour
from tests.solved_once import peak_hour_plan

PROFILE = [1.0] * 12 + [1.5] * 12


def _none_load(scenarios) -> float:
    none = next(s for s in scenarios if s.name == "none")
    return sum(row.load_requests_per_s for row in none.pools)


def test_the_peak_hour_is_the_busiest_of_the_most_gpus(tmp_path_factory):
    _, plan = peak_hour_plan(tmp_path_factory)  # the module text's day, solved once a run
    gpus = {h.hour: sum(p.gpus for p in h.pools) for h in plan.hours}
    most = max(gpus.values())
    busiest = max(
        (h for h in plan.hours if gpus[h.hour] == most), key=lambda h: _none_load(h.scenarios)
    )
    peak = plan.scenarios[0].hour
    assert gpus[peak] == most
    assert _none_load(plan.scenarios) == _none_load(busiest.scenarios)
    assert _none_load(plan.scenarios) == max(_none_load(h.scenarios) for h in plan.hours)
    assert replayed_hour(plan).hour == peak
