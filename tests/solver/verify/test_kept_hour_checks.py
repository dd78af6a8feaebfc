"""A horizon's month 0 verified alone and again within the horizon (solver.verify.months
.keep_hour_checks): the second verification finds month 0's hour checks made, and its
verdict is the one a fresh verification gives."""

from models.io.loading import validate_instance
from solver.solve import solve
from solver.verify import fleet, hour_capacity, hours
from solver.verify.months import hour_checks, keep_hour_checks
from tests.solver.time.test_months import _data, _lone_rps


def test_kept_for_two_uses_of_the_same_instance_object():
    q = _lone_rps()
    kept = validate_instance(_data(10.5 * q, 0.10, 2, 2), "kept.yaml")
    other = validate_instance(_data(10.5 * q, 0.10, 2, 2), "kept.yaml")  # equal, not it
    keep_hour_checks(kept)
    assert hour_checks(other) == {} and hour_checks(other) is not hour_checks(other)
    first = hour_checks(kept)
    first["made"] = True
    assert hour_checks(kept) is first  # the second use: the same memo
    assert "made" not in hour_checks(kept)  # two uses spent: a new one


def test_the_horizon_finds_month_0_checked(monkeypatch):
    """10.5 x q(1) a flat day, 2 months at 10%: month 0 runs 11 GPUs every hour. Verified
    alone with its checks kept, then within the horizon: the horizon's month 0 asks the
    static verifier nothing (each hour's check made), its later month alone asks it, and
    the verdict is a fresh verification's."""
    q = _lone_rps()
    inst = validate_instance(_data(10.5 * q, 0.10, 2, 2), "months.yaml")
    plan = solve(inst)
    month_0 = plan.model_copy(update={"months": ()})
    asked: list[str] = []
    real = fleet.verify

    def counted(instance, checked):
        asked.append(instance.name)
        return real(instance, checked)

    monkeypatch.setattr(hour_capacity, "verify", counted)
    keep_hour_checks(inst)
    hours.verify_hours(inst, month_0)  # its summary states 2 months: its hours are what counts
    alone = len(asked)
    assert alone >= 1  # the flat day's 24 hours: one check, the others at the same rates
    asked.clear()
    kept = hours.verify_hours(inst, plan)
    with_kept = len(asked)
    asked.clear()
    fresh = hours.verify_hours(inst, plan)  # the kept checks spent: month 0 checked anew
    assert kept == fresh and fresh.ok
    assert with_kept == len(asked) - alone  # month 1's checks alone
