"""An hourly plan with shared groups (policy.colocation) pays for the groups' GPUs and
passes the hour verifier, as the static plan of the same demand does.

Before: the hour verifier kept an hour's entries by `workload in serving`, which a
group's joined name ('support+sales') never is, so it found the groups' load carried by
nothing: solve exit 70 ('demand[none,support,east]@t00: 0.50 requests/s cannot be
served ... capacity 0.00') on every hourly instance with co-location (a reserved price
alone makes one). And the periods program's pricing rows counted the pools' replica
columns alone (solver.time.periods.gpus_used): a group's GPUs were free in every hour,
so none was committed and the read-back rented it on demand (here $2,847/month = one GPU
reserved 1.5 x 730 + one on demand 2.4 x 730, where committing both costs $2,190); with
chat, a 32B model and prefixes the program bought 15 replicas of one group and 6 of
another for the tie-break alone ($42,048/month read back, the static plan's $14,016)."""

from models.io.loading import validate_instance
from solver.solve import solve
from solver.verify.hours import verify_any
from tests.solver.colocation.test_agree_engine_precisions import _base_and_adapters

RESERVED = 1.5
HOURS_PER_MONTH = 730.0


def _hourly():
    """The base-and-adapters instance with a reserved price (the plan goes hourly)."""
    data = _base_and_adapters().model_dump(mode="json", exclude_unset=True)
    data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"] = RESERVED
    data["policy"]["buy_unit"] = "gpu"
    return validate_instance(data, "hourly-groups.yaml")


def test_hourly_groups_are_paid_and_verified(tmp_path_factory):
    from tests.solved_once import hourly_groups_plan

    static = solve(_base_and_adapters())
    inst, plan = hourly_groups_plan(tmp_path_factory)  # solve(_hourly()), once a run
    assert plan.hours and verify_any(inst, plan).ok
    groups = {(p.workload, p.key): p.count for p in plan.replicas if p.members}
    assert groups == {(p.workload, p.key): p.count for p in static.replicas if p.members}
    # a flat day: the static plan's two GPUs (chat's, the adapters' group's) committed all
    # day at the reserved price: 2 x 1.5 x 730
    assert plan.cost_per_month == 2 * RESERVED * HOURS_PER_MONTH
    for hour in plan.hours:
        used = sum(p.gpus for p in hour.pools)
        assert used == sum(g.used for g in hour.gpus)  # the groups' GPUs counted
