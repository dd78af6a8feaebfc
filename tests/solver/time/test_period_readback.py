"""A period's read-back inside a plan of periods (solver.time.solve.period_plans) leaves
out what the day's plan states itself (binding rows, cost attribution) and reads the
rest as the whole read-back does."""

from models.io.loading import load_instance
from solver.candidates.pools import assess_pools
from solver.candidates.table import build_candidates
from solver.program.optimised import Optimised
from solver.readback.assign import chosen_sizes, read_plan, replica_counts
from solver.solve import solve_program
from solver.time.solve import assessed, hourly_plan
from tests.paths import INSTANCES
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


def test_the_periods_share_the_physics_at_a_size_and_read_the_same_curves():
    """`assessed` (period_plans: each size's physics asked once for all the periods)
    gives each period the curve `assess_pools` alone gives it: a size an earlier call
    added and this one asks for is read back, a size it does not ask for stays out (a
    curve's physics at n is its largest point at most n: an extra point would move it).
    Each candidate of seed-chat-sizing at sizes {n + 7}, {n + 3, n + 7}, {n + 7} (n its
    largest tabulated size: sizes its curve lacks), against assess_pools on each."""
    instance = load_instance(INSTANCES / "seed-chat-sizing.yaml")
    table = build_candidates(instance)
    pools = {(w.name, c.key): c for w in instance.workloads for c in table.of(w.name)}
    points: dict = {}
    for extra in ({7}, {3, 7}, {7}):
        chosen = {
            key: (c.config, c.curve, {max(c.curve.sizes) + e for e in extra})
            for key, c in pools.items()
        }
        shared = assessed(instance, chosen, points)
        alone = assess_pools(instance, chosen)
        assert {k: c.points for k, c in shared.items()} == {k: c.points for k, c in alone.items()}
    lifted = {(w, key) for w, key, _ in points}
    assert lifted  # some pool's curve took a point: the memo was read
    for w, key in lifted:
        top = max(pools[(w, key)].curve.sizes)
        assert {n for v, k, n in points if (v, k) == (w, key)} == {top + 3, top + 7}
