"""A month's share of the run's time limit (policy.horizon_months): what each month's
solve may take so that the months after it still build and plan within the limit, and
what a month keeps for them (solver.time.step runs the months on these shares)."""

from dataclasses import replace

from solver.settings import SOLVE_SHARE, SolveSettings
from solver.time.horizon import Horizon

MIN_SOLVE_SHARE = 0.25
"""The least share of its equal part of the time a month's solve gets, whatever the
month before's overhead says (`month_share`). Small: a month whose search has no plan
when its share ends still has one (the held fleet's: solver.decompose.by_period), while
every month that solves past its part takes the months after it (at 0.5, on a machine
loaded 11 on 2 cores, 12 months of 5 regions x 8 workloads took about 30 s each against
an 18 s part, and the run's limit came in month 11's build: exit 4, no plan)."""

SHARED_MONTHS = 12
"""The most months a month's part of the solve time is shared with (`month_share`): month
m's part is the time left over min(H - m, SHARED_MONTHS), not over the H - m months
left. Month 0's plan is the one the fleet deploys now (later months are planned again
as the horizon rolls on), and its program is the one without a held fleet or floor to
start from; over H - m months its part shrank with the horizon: growth-horizon at
monthly_growth 0.01, 120 months and a 30 s limit gave month 0 0.23 s of solving and a
65% gap at $55,714 for the $26,163 its 12-month horizon proves optimal. A month's part
left over goes to the months after it, and the months after it keep what they need to
take their fallback plans (`kept_until`) whatever a month's part: a horizon longer than
SHARED_MONTHS gives its last months less search, not less than a plan. 12: the
shipped horizons' (growth-horizon, procurement-3region), whose parts it keeps."""

LATER_MONTH_BUILDS = 1.5
"""What month m keeps for each month after it, in program builds (`kept_until`): the
month's build, its solve from its held fleet past its share and its read-back (its
pricing LP is not run past its share: `PeriodsStep.price`). On the generated 5 regions x
8 workloads x 4 GPU types region-loss instance on a machine loaded 11 on 2 cores, months
built in 15-17 s and took 7-8 s more to their plan past their share."""


def kept_until(settings: SolveSettings, horizon: Horizon, build_s: float) -> float | None:
    """Seconds into the run by which month m's solve and pricing LP end, so that each of
    the H - m - 1 months after it still builds its program (which the run's limit L
    stops: solver.solve) and takes at least its fallback plan (the held fleet's) within
    the limit: `LATER_MONTH_BUILDS` of the months' longest build so far (`build_s`,
    month m's own, with the months' before it) kept for each,

        kept_m = L - LATER_MONTH_BUILDS x max(builds) x (H - m - 1) - max(0, V - (1 - s) L)

    (the longest: a build takes longer as the machine's load rises, 15 s -> 40 s over
    one run), V the horizon's verification after its last month as month 0's own
    foretells it (`Horizon.verify_s`: 0 for month 0, which has not measured it yet),
    less what the solve share s = SOLVE_SHARE keeps already (every month's solve ends by
    s L); the last month keeps that alone. None without months or a limit. The months
    whose turn comes past L - V are cut (`tail_due`), so V is not kept whole here: that
    put growth-horizon's months 1-69 of 120 at a 30 s limit on their fallbacks (the
    held peak fleet all day), $17.7M over the horizon against main's $13.7M."""
    deadline = settings.deadline
    if not horizon.months or deadline is None or deadline.limit_s is None:
        return None
    longest = max((*horizon.builds_s, build_s))
    later = max(0, horizon.months - horizon.month - 1)
    verify_s = max(0.0, horizon.verify_s - (1.0 - SOLVE_SHARE) * deadline.limit_s)
    return deadline.limit_s - LATER_MONTH_BUILDS * longest * later - verify_s


def tail_due(settings: SolveSettings, verify_s: float) -> bool:
    """Whether a month whose turn comes now is cut (solver.time.cut_month: held and grown,
    no program), so that what the run does after its last month (`verify_s`: the
    horizon's verification and report, solver.time.months.verification_kept) still ends
    within the limit L: past L - V, or past L itself (`SolveSettings.spent`)."""
    deadline = settings.deadline
    if deadline is None or deadline.limit_s is None:
        return False
    return settings.spent() or deadline.elapsed_s() >= deadline.limit_s - verify_s


def ending_by(settings: SolveSettings, kept_s: float | None) -> SolveSettings:
    """`settings` ending by `kept_s` at the latest (`kept_until`)."""
    deadline = settings.deadline
    if kept_s is None or deadline is None or deadline.limit_s is None:
        return settings
    if kept_s >= deadline.limit_s:
        return settings
    return replace(settings, deadline=replace(deadline, limit_s=kept_s))


def month_share(
    settings: SolveSettings, horizon: Horizon, kept_s: float | None = None
) -> SolveSettings:
    """The solve settings of month m of a horizon of H months (policy.horizon_months):
    an equal part (over at most `SHARED_MONTHS`) of the solve time left when the month's
    turn began (`started_s`, else now), less what the month takes besides its solve
    (`overhead_s`, as the month before took it), so that the last month has its turn
    within the limit; never less than
    `MIN_SOLVE_SHARE` of that part from now (a month whose build ate its part still
    solves):

        part_m     = (end - start) / min(H - m, SHARED_MONTHS)
        deadline_m = max(start + part_m - overhead, now + MIN_SOLVE_SHARE x part_m)

    (each month's time left over goes to the months after it; a month whose part ends
    without a plan goes on within one more part: `PeriodsStep.optimise`); and never past
    `kept_s`, what the months after it need (`kept_until`), the floor included: a month
    with no time of its own takes its fallback plan. A day without months keeps the
    settings."""
    deadline = settings.deadline
    if not horizon.months or deadline is None or deadline.limit_s is None:
        return settings
    now = deadline.elapsed_s()
    start = now if horizon.started_s is None else min(horizon.started_s, now)
    part = max(0.0, deadline.limit_s - start) / _sharing(horizon)
    end = max(start + part - horizon.overhead_s, now + MIN_SOLVE_SHARE * part)
    shared = replace(settings, deadline=replace(deadline, limit_s=min(deadline.limit_s, end)))
    return ending_by(shared, kept_s)


def _sharing(horizon: Horizon) -> int:
    """The months month m's part of the solve time is shared over: min(H - m,
    `SHARED_MONTHS`), at least 1."""
    return max(1, min(horizon.months - horizon.month, SHARED_MONTHS))


def retry_share(
    settings: SolveSettings, horizon: Horizon, kept_s: float | None = None
) -> SolveSettings:
    """The settings of month m's second try, its own part spent without a plan: one more
    equal part of the solve time left, from now, the months after it keeping theirs,

        deadline = now + (end - now) / min(H - m, SHARED_MONTHS)

    (the last month's second try has all that is left), never past `kept_s`."""
    deadline = settings.deadline
    if deadline is None or deadline.limit_s is None:
        return settings
    now = deadline.elapsed_s()
    part = max(0.0, deadline.limit_s - now) / _sharing(horizon)
    return ending_by(replace(settings, deadline=replace(deadline, limit_s=now + part)), kept_s)


def expired(settings: SolveSettings) -> bool:
    """Whether `settings`' deadline has passed (`SolveSettings.spent`)."""
    return settings.spent()
