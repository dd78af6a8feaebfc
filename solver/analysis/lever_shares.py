"""The levers' one deadline, handed out as each lever starts (solver.analysis.levers).

Each lever, as it starts, gets an even share of what is left over the rounds of `jobs`
levers still to end (itself included), so that the time a quick lever leaves is the
later ones', or more where the others would still have what a run like the base's takes
(`expect_s`): the first levers start with the longest re-solves (lever_edits.lever_work), so
that a lever an even share would stop is not solved twice, the second time alone at the
end (chat-3region's gh200 lever, 14 s to prove against a 7 s even share); a group of
levers proven together (solver.analysis.lever_groups) gets its members' shares at once;
a lever its share stopped unproven is tried once more after every other lever has had
its turn (`again`), with what they left.
"""

import math
from dataclasses import dataclass

from solver.settings import Deadline

MIN_SHARE_S = 1.0
"""Least time limit a lever's re-solve is given where that much is left (a solve needs
its candidates and program before it can stop with a plan)."""
BASE_SOLVES = 2.0
"""A lever with no base plan to start from (an hourly or month plan's) gets at least this
many times the base plan's own solve (at most what is left of the deadline): it is the
base's program with one change, and a share below what the base took would stop most
such levers with no plan at all. The first levers may so take the whole deadline, and
the later ones are then not started (`NOT_STARTED`)."""
MIN_START_S = 0.5
"""A lever whose turn comes with less than this left of the levers' deadline is not
started: its candidates and program alone take longer, so it would only pass the
deadline to report no plan."""
EXPECTED = True
"""Whether a share may be what the others would leave (`Shares.expect_s` from the base
run); off, even shares only: the bench's `before` (tests/bench/test_levers_speed.py)."""
NONE_LEFT = 0.0
"""`Shares.next_s` for a lever not to start (less than `MIN_START_S` left)."""


@dataclass
class Shares:
    """The levers' one deadline, handed out as each lever starts: what is left, over the
    rounds of `jobs` levers still to end (those not started, this one included, and
    those running beside it),

        share = min(left, max(k x left / ceil((not started + running) / jobs), floor_s,
                              left - others x expect_s / jobs)),

    k = 1 for a lever, its members for a group, others = not started (this one not
    counted) + running: what the others, `jobs` at a time, would leave of the deadline
    if each took expect_s (the last term 0 where expect_s is 0),

    and `NONE_LEFT` (the lever is not started) where left < `MIN_START_S`: no share
    reaches past the deadline."""

    deadline: Deadline
    jobs: int
    not_started: int
    floor_s: float = MIN_SHARE_S
    expect_s: float = 0.0
    """What a lever is expected to take (the base run's time); 0: even shares only."""

    def next_s(self, running: int, members: int = 1) -> float | None:
        """The time limit of the next lever to start, `running` others running beside it
        (None: no limit; `NONE_LEFT`: not to start); `members` levers proven together
        (a group, whose members' own turns were counted when they were probed): their
        shares summed, still never more than what is left."""
        left = self.deadline.remaining_s(floor_s=0.0)
        rounds = max(math.ceil((self.not_started + running) / self.jobs), 1)
        if members == 1:
            self.not_started -= 1
        if left is None:
            return None
        if left < MIN_START_S:
            return NONE_LEFT
        others_s = (self.not_started + running) * self.expect_s / self.jobs
        rest = left - others_s if self.expect_s > 0.0 else 0.0
        return min(left, max(members * left / rounds, self.floor_s, rest))

    def again(self) -> None:
        """Count one more lever to start: one tried again."""
        self.not_started += 1
