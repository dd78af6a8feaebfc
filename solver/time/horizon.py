"""Time as the program's dimension: a `Horizon` says which periods of the day and which
month of the procurement horizon one program covers, and so which program, read-back and
verifier the pipeline's one sequence (solver.solve) runs.

- Static (an instance that uses no time: no hourly profile, reserved or spot price,
  failover start, batch work or horizon): one period of 24 hours, the one-period case.
  Its program is the static one (solver.program.build), solved by workload
  (solver.decompose), read back by solver.readback and checked by solver.verify.fleet.
  The one-period periods program costs the same to the cent (tested), so the static
  program stands for it: its decomposition and its goldens are kept.
- In time: the periods of the warm day (solver.time.periods.day_periods), one copy of
  the static program per period joined by the pricing rows; read back hour by hour
  (solver.time.solve) and checked by the hour verifier.
- Months (policy.horizon_months = H): month m's horizon is the periods of month m's
  grown day, with the commitments it inherits as bounds on its `committed` columns
  (solver.time.months).

Months are solved rolling, one after the other through the same sequence, not jointly:
month m's program is month m's periods program with

    committed_m[r,g] >= committed_(m-1)[r,g]        (bought GPUs are never sold back)
    committed_m[r,g] <= committed_(m-1)[r,g]  if m < L (orders arrive after L months)

Rolling keeps each program the size of one day (a joint program is H times the hourly
program, and its integer commitments couple every month), gives every month the same
guards, deadline share, pricing LP and read-back as month 0, and is exact where the
lower bound does not bind: with growing demand each month's own optimum commits at
least the month before's. Where it binds the rolling plan is feasible but may cost more
than a joint one that commits earlier for later months (it does not look ahead).
The whole horizon is verified once, month by month (solver.verify.hours checks each
month on its own and the orders between them), so a month's sequence defers its
verification to the horizon (`verified_alone`).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from models.operations.time_demand import uses_time
from models.schema.instance import Instance

if TYPE_CHECKING:  # the static path loads no module of time (tests/test_imports.py)
    from models.operations.time_periods import Period


@dataclass(frozen=True)
class Horizon:
    """The periods and the month one program covers (see the module text)."""

    periods: tuple["Period", ...] = ()
    """The periods of the day, by first UTC hour; none: the static plan's one period,
    the whole day at the peak rates."""
    month: int = 0
    months: int = 0
    """policy.horizon_months; 0 without a procurement horizon."""
    committed_floor: Mapping[tuple[str, str], float] = field(default_factory=dict)
    """(region, GPU) -> GPUs committed the month before (month m >= 1)."""
    frozen: bool = False
    """Month m < lead_time_months: the commitments stay at the floor."""
    growth_factor: float = 1.0
    """Month m's largest demand factor (what its infeasibility diagnosis states)."""
    started_s: float | None = None
    """Seconds into the run when month m's turn began (before its build); None: when its
    solve starts (`solver.time.shares.month_share`)."""
    overhead_s: float = 0.0
    """What a month takes besides its solve (build, pricing LP, read-back), as the month
    before took it: kept out of month m's share of the solve time."""
    earlier_fleet: object | None = None
    """The fleet held all day that the month before started from
    (solver.decompose.period_split.Held): month m's first plan where its own peak's is
    not planned within its share (solver.time.step)."""
    builds_s: tuple[float, ...] = ()
    """Seconds each month before m took to build its periods program: what month m keeps
    for each month after it (`solver.time.shares.kept_until`)."""
    verify_s: float = 0.0
    """Seconds kept at the end of the run for the horizon's verification after its last
    month (`solver.time.months.verification_kept`, from month 0's own): what every month
    keeps besides the later months' builds (`solver.time.shares.kept_until`)."""

    @classmethod
    def of(cls, instance: Instance) -> "Horizon":
        """Month 0 of the instance: static, or its warm day's periods."""
        if not uses_time(instance):
            return cls()
        from solver.time.periods import day_periods

        return cls(day_periods(instance), months=instance.policy.horizon_months or 0)

    def later_month(
        self,
        instance: Instance,
        month: int,
        floor: Mapping[tuple[str, str], float],
        started_s: float | None = None,
        overhead_s: float = 0.0,
        earlier_fleet: object | None = None,
        builds_s: tuple[float, ...] = (),
        verify_s: float = 0.0,
    ) -> tuple[Instance, "Horizon"]:
        """Month `month`'s instance (its demand grown: models.operations.procurement) and
        horizon: the periods of its grown day, its commitments bounded by `floor` (the
        month before's); its turn began `started_s` into the run, and the month before
        took `overhead_s` besides its solve and started from `earlier_fleet`; the months
        before built their programs in `builds_s`; `verify_s` is kept for the horizon's
        verification."""
        from models.operations.procurement import month_instance
        from solver.time.months import month_growth
        from solver.time.periods import day_periods

        grown = month_instance(instance, month)
        horizon = Horizon(
            day_periods(grown),
            month=month,
            months=self.months,
            committed_floor=dict(floor),
            frozen=month < instance.policy.lead_time_months,
            growth_factor=month_growth(instance, month),
            started_s=started_s,
            overhead_s=overhead_s,
            earlier_fleet=earlier_fleet,
            builds_s=builds_s,
            verify_s=verify_s,
        )
        return grown, horizon

    @property
    def in_time(self) -> bool:
        """Whether the periods program (solver.time.periods) is built; else the static one."""
        return bool(self.periods)

    @property
    def verified_alone(self) -> bool:
        """Whether this program's plan is verified on its own: a plan with months is
        verified once, as a whole horizon, after its last month."""
        return not self.months

    @property
    def past_limit(self) -> bool:
        """Whether the run's deadline no longer stops this month's build: a later month
        with a fleet to fall back on (the month before's: solver.time.step), whose share,
        spent, answers with it at once; the months before it are planned, and a month's
        plan needs its program (read back and verified period by period), so its build
        runs past the limit rather than lose them to exit 4."""
        return bool(self.month) and self.earlier_fleet is not None

    def checked(self, settings, stage: str, built_late: bool = False) -> None:
        """`settings.check(stage)` (TimeLimitReached past the deadline), or only its
        progress line where the month builds `past_limit`, or where its step built on
        past the deadline with its fallback in hand (`built_late`: solver.time.step)."""
        if self.past_limit or built_late:
            settings.passed(stage)
        else:
            settings.check(stage)

    @property
    def stage(self) -> str:
        """The stage the deadline names while this program solves."""
        return f"month {self.month}" if self.month else "solve"

    @property
    def what(self) -> str:
        """The plan's name in messages."""
        if self.month:
            return f"plan for month {self.month}"
        return "hourly plan" if self.in_time else "plan"
