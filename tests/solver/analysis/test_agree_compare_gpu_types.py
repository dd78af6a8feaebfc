"""compare's 'GPU types' row (and the gate on a saving that rests on a borrowed GPU
type, which reads it) counts every type the plan runs replicas on: over a horizon every
month's, over the day every hour's, where it read month 0's peak fleet alone. A plan of
months whose later months add a type, or an hourly plan whose trough runs a spot type
the peak does not, read fewer types than it runs, and a candidate whose horizon saving
came from a borrowed type used only from month 1 passed the borrowed-efficiency gate."""

from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import FailoverStart, Hour, Month


def _pool(gpu: str, count: int = 2) -> ReplicaPool:
    return ReplicaPool(
        workload="chat", region="r1", gpu=gpu, precision="fp8", tp=1, pp=1, count=count
    )


def _day(*pools: ReplicaPool) -> tuple[Hour, ...]:
    return tuple(Hour(hour=h, period=0, pools=pools) for h in range(24))


def test_a_type_a_later_month_adds_is_a_type_of_the_horizon():
    month0 = _day(_pool("h100-sxm"))
    month1 = _day(_pool("h100-sxm"), _pool("mi300x"))  # month 1 outgrows the H100s
    plan = Plan(
        replicas=(_pool("h100-sxm"),),
        hours=month0,
        months=(
            Month(month=0, growth_factor=1.0, cost_per_month=1.0),
            Month(month=1, growth_factor=1.1, cost_per_month=1.0, hours=month1),
        ),
    )
    assert plan.gpu_types_run() == ("h100-sxm", "mi300x")
    # judged per month (the other side plans other months): month 0's alone
    assert plan.gpu_types_run(over_horizon=False) == ("h100-sxm",)


def test_every_hour_of_the_day_and_its_failover_starts_count():
    trough = Hour(hour=3, period=1, pools=(_pool("h100-sxm"), _pool("h200")))
    loss = Hour(
        hour=13,
        period=2,
        pools=(_pool("h100-sxm"),),
        failover_starts=(FailoverStart(scenario="lose=r2", pool=_pool("b200")),),
    )
    plan = Plan(replicas=(_pool("h100-sxm"),), hours=(trough, loss))
    assert plan.gpu_types_run() == ("b200", "h100-sxm", "h200")
    # a pool of no replicas runs nothing
    assert Plan(replicas=(_pool("h100-sxm"), _pool("h200", 0))).gpu_types_run() == ("h100-sxm",)


def test_a_horizon_saving_on_a_borrowed_type_of_later_months_is_gated():
    """test_months' hand case (Llama 3.1 8B, 10.5 q growing 10% a month over 4 months:
    11, 12, 13, 14 GPUs) with 12 H100s at most: months 2 and 3 need another type. The base
    offers H200 at $3.00, the candidate MI300X (no calibration rows of its own: borrowed)
    at $2.50. Month 0 runs H100s alone on both sides, so the ledger read 'h100-sxm' twice
    and the candidate was adopted on its horizon saving, which rests on the MI300X."""
    from models.io.loading import validate_instance
    from solver.analysis.compare import compare_instances
    from tests.solver.time.test_months import _data, _lone_rps

    def offering(gpu: str, price: float):
        data = _data(10.5 * _lone_rps(), 0.10, 0, 4)
        data["regions"][0]["supply"]["h100-sxm"]["max_gpus"] = 12
        data["gpus"].append({"name": gpu})
        data["regions"][0]["supply"][gpu] = {"max_gpus": 64, "price_per_gpu_hour": price}
        return validate_instance(data, f"{gpu}.yaml")

    result = compare_instances(offering("h200", 3.0), offering("mi300x", 2.5))
    assert result.base.gpu_types == ("h100-sxm", "h200")
    assert result.candidate.gpu_types == ("h100-sxm", "mi300x")
    assert result.candidate.horizon_cost < result.base.horizon_cost
    assert result.decision == "reject"
    assert any("borrowed efficiencies: mi300x" in reason for reason in result.reasons)
