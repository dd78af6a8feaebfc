"""A procurement month whose turn comes past the time limit is planned without a program:
the month before's hours held and grown by (1 + g), its commitment at the level that
bills them least (solver.time.cut_month); where a cap refuses that, or the verifier
does, by its program's fallback as before.

The clock is not waited on: it jumps 10^6 s past the limit once month 1 is read back
(as tests/solver/time/test_month_fallback.py's cut month does)."""

import math
import types

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.program.families.pricing import OfferTerms
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.time import cut_month
from solver.time.months import HELD_AND_GROWN
from solver.verify.hours import verify_hours
from tests.solver.time.test_stopped_months import _months

RESERVED, ON_DEMAND = 1.0, 2.0


def _offer(gpus_per_server: int = 1, reserved: float | None = RESERVED) -> OfferTerms:
    return OfferTerms(
        region="r1",
        gpu="h100-sxm",
        existing=0,
        max_gpus=64,
        available=64,
        on_demand_price_per_gpu_hour=ON_DEMAND,
        reserved_price_per_gpu_hour=reserved,
        max_on_demand_gpus=64,
        spot_price_per_gpu_hour=None,
        gpus_per_server=gpus_per_server,
    )


def _day(busy: int, quiet: int) -> list[tuple]:
    """6 hours at `busy` GPUs of r1's h100-sxm, 18 at `quiet`."""
    pool = lambda n: (types.SimpleNamespace(region="r1", gpu="h100-sxm", gpus=n),)  # noqa: E731
    return [pool(busy)] * 6 + [pool(quiet)] * 18


def test_the_commitment_of_a_cut_month_bills_its_grown_hours_least():
    """6 hours need 8 GPUs, 18 need 4; reserved $1, on demand $2 a GPU-hour, from a floor
    of 2. A day's bill at commitment c is 24 x 1 x c + 2 x (GPU-hours beyond c):

        c = 2: 48 + 2 x (6 x 6 + 18 x 2) = 48 + 144 = 192
        c = 4: 96 + 2 x (6 x 4)          = 96 +  48 = 144   <- least
        c = 5: 120 + 2 x (6 x 3)         = 120 + 36 = 156
        c = 8: 192 + 0                                = 192

    In servers of 4 GPUs from a floor of 0 the levels are 0, 4, 8 (240, 144, 192): 4 again.
    Without a reserved price there is nothing to commit: the floor stays."""
    day = _day(8, 4)
    assert cut_month.cheapest_commitment(_offer(), 2.0, day) == 4.0
    assert 24 * 4 + 2 * 6 * 4 == 144 < 24 * 5 + 2 * 6 * 3 == 156
    assert cut_month.cheapest_commitment(_offer(gpus_per_server=4), 0.0, day) == 4.0
    assert cut_month.cheapest_commitment(_offer(reserved=None), 2.0, day) == 2.0
    # a floor above every hour's need is kept: never fewer than the month before
    assert cut_month.cheapest_commitment(_offer(), 10.0, day) == 10.0


def solved_past_the_limit_after_month_0(
    monkeypatch, inst, settings: SolveSettings
) -> tuple[Plan, list[int]]:
    """`inst` solved with a clock that passes its limit once month 0 is read back: month
    1's turn comes past it. Returns the plan and the months whose periods program was
    built (tests/solver/time/test_cut_month_weights.py cuts its months the same way)."""
    from solver import settings as settings_module
    from solver.time import step

    real, offset = settings_module.time.monotonic, [0.0]
    monkeypatch.setattr(
        settings_module, "time", types.SimpleNamespace(monotonic=lambda: real() + offset[0])
    )
    built: list[int] = []
    build, read_back = step.PeriodsStep.build, step.PeriodsStep.read_back

    def building(self, backend, settings):
        built.append(self.horizon.month)
        return build(self, backend, settings)

    def read(self, *args):
        plan = read_back(self, *args)
        if self.horizon.month == 0:
            offset[0] = 1e6  # past the limit before month 1's turn
        return plan

    monkeypatch.setattr(step.PeriodsStep, "build", building)
    monkeypatch.setattr(step.PeriodsStep, "read_back", read)
    return solve_program(inst, settings).plan, built


def _cut_after_month_1(monkeypatch) -> tuple[Plan, list[int], object]:
    """A 2-month horizon (r1 at 400 requests/s, +50% a month) whose clock passes its
    limit once month 0 is read back (`solved_past_the_limit_after_month_0`). Returns the
    plan, the months whose periods program was built, and the instance."""
    inst = validate_instance(_months(2, 0.5, r1=400.0), "periods.yaml")
    settings = SolveSettings.of(inst, mip_gap=1e-3)
    plan, built = solved_past_the_limit_after_month_0(monkeypatch, inst, settings)
    return plan, built, inst


def test_a_cut_month_is_the_month_befores_hours_held_and_grown_without_a_program(monkeypatch):
    """Month 1 is cut: no periods program is built for it. Each of its hours runs month
    0's pools of that hour, each grown to ceil(n x 1.5); its commitment never falls; it
    has no bound (status 'feasible (gap unknown)', no gap), its note names it cut and how
    it was planned, and the horizon passes the hour verifier."""
    plan, built, inst = _cut_after_month_1(monkeypatch)
    assert built == [0]
    one = plan.months[1]
    for before, after in zip(plan.hours, one.hours, strict=True):
        grown = [
            (p.workload, p.key, p.region, math.ceil(p.count * 1.5 - 1e-9)) for p in before.pools
        ]
        assert [(p.workload, p.key, p.region, p.count) for p in after.pools] == grown
    floor = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    assert all(c.committed_gpus >= floor[(c.region, c.gpu)] for c in one.committed)
    assert (one.status, one.mip_gap, one.stopped_at_limit) == ("feasible (gap unknown)", None, True)
    (note,) = [n for n in plan.notes if "cut at the time limit, not searched" in n]
    assert note.startswith("month 1 cut at the time limit") and HELD_AND_GROWN in note
    assert plan.status.startswith("feasible")
    assert verify_hours(inst, plan).ok


def test_a_cut_month_the_verifier_refuses_is_planned_again_by_its_program(monkeypatch):
    """A rule that forgot to grow the pools (month 0's hours held as they were, for 1.5x
    the demand) gives month 1 a plan the horizon's verifier refuses: the run plans its
    cut months again by their programs rather than return it (or fail), and the plan it
    returns verifies."""
    grown = cut_month._grown_pools
    monkeypatch.setattr(
        cut_month,
        "_grown_pools",
        lambda g, previous, table, growth: grown(g, previous, table, dict.fromkeys(growth, 1.0)),
    )
    plan, built, inst = _cut_after_month_1(monkeypatch)
    assert built == [0, 1]  # month 1 held first, refused, then built
    assert HELD_AND_GROWN not in plan.months[1].model_dump_json()
    assert plan.months[1].mip_gap is not None
    assert verify_hours(inst, plan).ok


def test_cut_months_in_a_row_grow_the_last_searched_month_once(monkeypatch):
    """Months 1 and 2 of 3 are cut (growth 30%): month 2's pools are month 0's grown
    once, ceil(n x 1.3^2) = ceil(1.69 n), not month 1's grown again, ceil(ceil(1.3 n) x
    1.3), which gains a replica where the first ceil rounds up (n = 3: ceil(5.07) = 6
    against ceil(3.9) = 4, ceil(5.2) = 6; n = 2: ceil(3.38) = 4 against 3 -> ceil(3.9) = 4;
    n = 5: ceil(8.45) = 9 against 7 -> ceil(9.1) = 10). Commitments never fall, and the
    horizon verifies."""
    inst = validate_instance(_months(3, 0.3, r1=400.0), "periods.yaml")
    settings = SolveSettings.of(inst, mip_gap=1e-3)
    plan, built = solved_past_the_limit_after_month_0(monkeypatch, inst, settings)
    assert built == [0]
    once = [
        sorted((p.key, p.region, math.ceil(p.count * 1.3**2 - 1e-9)) for p in hour.pools)
        for hour in plan.hours
    ]
    twice = [
        sorted(
            (p.key, p.region, math.ceil(math.ceil(p.count * 1.3 - 1e-9) * 1.3 - 1e-9))
            for p in hour.pools
        )
        for hour in plan.hours
    ]
    two = [sorted((p.key, p.region, p.count) for p in h.pools) for h in plan.months[2].hours]
    assert two == once
    assert once != twice  # the case tells the two apart
    for later, earlier in zip(plan.months[2].committed, plan.months[1].committed, strict=True):
        assert later.committed_gpus >= earlier.committed_gpus
    assert verify_hours(inst, plan).ok
