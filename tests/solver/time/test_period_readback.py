"""A period's read-back inside a plan of periods (solver.time.solve.period_plans) leaves
out what the day's plan states itself (binding rows, cost attribution) and reads the
rest as the whole read-back does."""

from solver.candidates.pools import assess_pools
from solver.program.optimised import Optimised
from solver.readback.assign import chosen_sizes, read_plan, replica_counts
from solver.solve import solve_program
from solver.time.solve import hourly_plan
from tests.solver.time.test_time_program import _instance


def test_a_period_reads_as_the_whole_read_back_less_what_the_day_states():
    solved = solve_program(_instance())
    step = solved.time_step
    values = step.values
    for part in step.program.periods:  # the trough (1x) and the peak (4x)
        own = step.program.period_values(values, part.first_hour)
        sets = part.program.sets
        curves = assess_pools(sets.instance, chosen_sizes(sets, replica_counts(sets, own)))
        args = (part.program, Optimised(solved.result), own, {}, solved.settings, curves)
        whole, period = read_plan(*args), read_plan(*args, period=True)
        assert period.binding == () and period.cost_attribution == ()
        assert whole.cost_attribution  # the whole read-back attributes the period's cost
        left_out = {"binding", "cost_attribution"}
        assert period.model_dump(exclude=left_out) == whole.model_dump(exclude=left_out)


def test_a_later_month_s_day_reads_as_the_plan_s_less_its_cost_attribution():
    """A later month of a horizon keeps no cost attribution (solver.time.months.Month):
    its read-back leaves it out, and everything else reads as the plan's own."""
    solved = solve_program(_instance())
    step = solved.time_step
    args = (step.program, solved.result, step.values, solved.settings)
    whole, month = hourly_plan(*args), hourly_plan(*args, attributed=False)
    assert whole.cost_attribution and month.cost_attribution == ()
    left_out = {"cost_attribution"}
    assert month.model_dump(exclude=left_out) == whole.model_dump(exclude=left_out)
