"""A cut month's pools restate their routing weights at their grown counts (the scale
sweep, tests/bench/scale_sweep.py: months6-3r-3w-2g-region-coloc at a 20 s limit had
months 1-5 held and grown, refused by the hour verifier for 190 stale weights, and
planned again by their programs: 77 s of wall time for the 20 s limit).

Where two configurations serve one workload in a region (single GPUs, any number of
configurations per pool: the generator's policy), ceil(n x (1 + g)) grows their counts
by different ratios, so the month before's weights (n_p q_p / sum n q) no longer hold.

The clock jumps 10^6 s past the limit once month 0 is read back, as
tests/solver/time/test_cut_month.py's cut month does."""

from models.io.loading import validate_instance
from solver.settings import SolveSettings
from solver.time.months import HELD_AND_GROWN
from solver.verify.hours import verify_hours
from tests.solver.time.test_cut_month import solved_past_the_limit_after_month_0
from tests.synthetic_time import months_data


def test_a_cut_months_pools_are_weighted_by_their_grown_capacity(monkeypatch):
    """3 regions, Llama 3.1 70B (w01 of the generator, served by two configurations in
    r02 in some hours) over 2 months at +7%, no lead time: month 1 is cut, held and
    grown, and the verifier accepts it as it is (no periods program built for it); in
    each of its hours every pool's weight is its count x rate over its workload's in
    the region."""
    data = months_data(3, 2, 2, "none", 0, horizon_months=2, monthly_growth=0.07)
    data["policy"]["lead_time_months"] = 0
    data["workloads"] = data["workloads"][1:]  # w01 alone
    inst = validate_instance(data, data["name"])
    settings = SolveSettings.of(inst, threads=1)
    plan, built = solved_past_the_limit_after_month_0(monkeypatch, inst, settings)
    assert built == [0]  # month 1 held and grown, not planned again
    (note,) = [n for n in plan.notes if "cut at the time limit, not searched" in n]
    assert note.startswith("month 1 cut at the time limit") and HELD_AND_GROWN in note
    one = plan.months[1]
    split = 0
    for hour in one.hours:
        credit: dict = {}
        for p in hour.pools:
            key = (p.workload, p.region)
            credit[key] = credit.get(key, 0.0) + p.count * p.requests_per_s_per_replica
        for p in hour.pools:
            share = p.count * p.requests_per_s_per_replica / credit[(p.workload, p.region)]
            assert abs(p.routing_weight - share) <= 1e-9
            split += share < 1.0
    assert split > 0  # some hour has two pools sharing a region's traffic
    assert verify_hours(inst, plan).ok
