"""A plan whose verification ends past the run's time limit says so (solver.stages.verified).

The verifier runs whatever the limit (every plan is verified, and the plan is in hand), and
--time-limit bounds the whole run: before, a 3-month co-located plan verified 8 s past a
60 s limit said nothing of it. The clock is a deadline started in the past, not waited
on."""

import time
from dataclasses import replace

from solver.plan.schema import Plan
from solver.settings import Deadline, SolveSettings
from solver.stages import verified
from solver.verify.verdict import Verification

OK = Verification(ok=True, violations=(), cost_per_month=0.0, total_gpus=0, checks=())


def _at(elapsed_s: float, limit_s: float | None) -> SolveSettings:
    return replace(SolveSettings(), deadline=Deadline(time.monotonic() - elapsed_s, limit_s))


def test_a_verification_past_the_limit_is_noted_in_the_plan():
    plan = verified(Plan(instance="x"), OK, "hourly plan", _at(70.0, 60.0))
    (note,) = plan.notes
    assert note.startswith("time limit: the verification of the hourly plan ended at 70.")
    assert "past the 60 s limit" in note


def test_a_verification_within_the_limit_or_without_one_adds_nothing():
    plan = Plan(instance="x")
    assert verified(plan, OK, "plan", _at(10.0, 60.0)).notes == ()
    assert verified(plan, OK, "plan", _at(70.0, None)).notes == ()
    assert verified(plan, OK, "plan").notes == ()
