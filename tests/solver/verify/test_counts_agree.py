"""GPUs bought and GPUs used, stated alike by the plan, its header, the verifier and the
goldens; the idle share at peak is over the GPUs paid (issue 32).

instances/offline-batch.yaml buys whole MI300X servers of 8 for a pool of 10 GPUs:
ceil(10 / 8) = 2 servers = 16 GPUs paid, 6 of them serving nothing, so at least
6 / 16 = 37.5% of what is paid idles whatever the pool's own utilisation.
"""

import pytest

from cli.render.plan_tables import gpu_counts
from models.io.loading import load_instance
from models.operations.site import gpus_paid
from solver.plan.schema import Plan
from solver.solve import solve
from solver.studies.batch import Golden, Outcome, compare
from solver.verify.fleet import verify
from tests.paths import INSTANCES

GPUS_PER_SERVER = 8  # MI300X platform (catalog gpus_per_node)


def test_gpus_paid_counts_whole_servers_bought_and_owned_gpus_in_use():
    assert gpus_paid(3, 0, 8) == 8  # one server for 3 busy GPUs: 5 idle GPUs paid
    assert gpus_paid(10, 4, 8) == 8 + 4  # 6 beyond the fleet -> one server, 4 owned in use
    assert gpus_paid(3, 5, 8) == 0 + 3  # owned GPUs left idle are not this plan's bill
    assert gpus_paid(13, 0, 1) == 13  # buy_unit gpu: paid = used


@pytest.fixture(scope="module")
def batch_plan():
    instance = load_instance(INSTANCES / "offline-batch.yaml")
    return instance, solve(instance)


def _none_utilisation(plan: Plan) -> float:
    (load,) = next(s for s in plan.scenarios if s.name == "none").pools
    return load.utilisation


def test_idle_share_is_over_the_gpus_paid_not_the_gpus_used(batch_plan):
    _, plan = batch_plan
    (use,) = plan.gpus
    used = use.used
    paid = GPUS_PER_SERVER * -(-used // GPUS_PER_SERVER)  # whole servers, none owned
    assert (use.purchased, use.paid) == (paid, paid)
    u = _none_utilisation(plan)
    assert plan.idle_fraction == pytest.approx(1 - used * u / paid)
    # the GPUs no pool runs on idle on their own: (paid - used) / paid at the least
    assert plan.idle_fraction >= (paid - used) / paid
    # against the old figure over GPUs used (1 - u): u x (paid - used) / paid more idle
    assert plan.idle_fraction - (1 - u) == pytest.approx(u * (paid - used) / paid)


def test_the_header_the_verifier_and_the_golden_state_bought_and_used(batch_plan):
    instance, plan = batch_plan
    bought = sum(use.purchased for use in plan.gpus)
    check = verify(instance, plan)
    assert check.ok, check.violations
    assert (check.gpus_bought, check.total_gpus) == (bought, plan.total_gpus)
    assert gpu_counts(plan) == f"{bought} GPUs bought, {plan.total_gpus} used"
    outcome = Outcome(
        file="offline-batch.yaml",
        status="solved",
        cost_per_month=plan.cost_per_month,
        total_gpus=plan.total_gpus,
        gpus_bought=bought,
        idle_fraction=plan.idle_fraction,
        verified=True,
    )
    golden = Golden.of(outcome)
    assert (golden.gpus_bought, golden.total_gpus) == (bought, plan.total_gpus)
    assert golden.idle_fraction == round(plan.idle_fraction, 3)
    moved = compare(outcome.model_copy(update={"gpus_bought": bought + 8}), golden)
    assert moved.ok and f"GPUs bought: {bought} -> {bought + 8}" in moved.notes


def test_the_verifier_recomputes_the_idle_share_over_the_gpus_paid(batch_plan):
    instance, plan = batch_plan
    u = _none_utilisation(plan)
    over_used = 1 - u  # what the plan used to state: busy GPUs over GPUs used
    stated = plan.model_copy(update={"idle_fraction": over_used})
    findings = [v for v in verify(instance, stated).violations if v.requirement == "idle_fraction"]
    (finding,) = findings
    assert f"{plan.total_gpus * u:,.2f} busy GPUs / 16 GPUs paid" in finding.message


def test_owned_gpus_in_use_are_paid_and_counted(batch_plan):
    """With 4 MI300X owned, the pool of 10 needs 6 more: one server of 8, so 8 + 4 = 12
    GPUs are paid and the header says 4 of them are owned."""
    instance, _ = batch_plan
    region = instance.regions[0].model_copy(update={"existing": {"mi300x": 4}})
    owned = instance.model_copy(update={"regions": (region,)})
    plan = solve(owned)
    (use,) = [u for u in plan.gpus if u.gpu == "mi300x"]
    assert use.used == 10 and use.existing == 4
    assert (use.purchased, use.paid) == (8, 8 + 4)
    assert gpu_counts(plan) == "8 GPUs bought, 10 used (4 of them owned)"
    u = _none_utilisation(plan)
    assert plan.idle_fraction == pytest.approx(1 - 10 * u / 12)
    assert verify(owned, plan).ok
