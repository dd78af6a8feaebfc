"""Simple pools in time (issue 32): `policy.max_configs_per_pool` holds in every period of the
hourly program, for the warm pools and for the replicas started after a region loss
(solver.program.families.simplicity per period, solver.program.families.failover_start).

Property over small generated instances: two regions 20 ms apart, H100 and H200 at drawn
prices, TP 1 or 2, a drawn daily shape and start time; in every hour, for every workload,
region and phase, the configurations its warm pools run plus those started after any one
region loss number at most the limit. Every plan has passed the hour verifier in `solve`."""

from collections import defaultdict

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.candidates.table import build_candidates
from solver.solve import solve
from solver.verify.hours import verify_hours

SHAPES = (
    [1.0] * 24,
    [1.0] * 12 + [3.0] * 12,
    [1.0 + (h % 6) for h in range(24)],
)


def _instance(rates, h200_price, shape, start_s, limit):
    regions = [
        {
            "name": name,
            "supply": {
                "h100-sxm": {"max_gpus": 64, "price_per_gpu_hour": 2.4},
                "h200": {"max_gpus": 64, "price_per_gpu_hour": h200_price},
            },
        }
        for name in rates
    ]
    data = {
        "name": "simple-pools-in-time",
        "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": regions,
        "links": [["r1", "r2", 20]],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    r: {"peak_requests_per_s": rate, "hourly_profile": list(shape)}
                    for r, rate in rates.items()
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {
                    "ttft_p99_ms": 1000,
                    "tpot_p99_ms": 50,
                    "max_failover_rtt_ms": 50,
                    "availability": 0.999,
                },
            }
        ],
        "policy": {
            "survive": "region",
            "tensor_parallel": [1, 2],
            "replica_start_s": 240,
            "scale_detection_s": 60,
            "failover_start_s": start_s,
            "max_configs_per_pool": limit,
        },
    }
    return validate_instance(data, "simple-pools-in-time.yaml")


def configs_by_hour(plan) -> dict[tuple[int, str, str, str, str], set[str]]:
    """(hour, scenario, workload, region, phase) -> the configurations running: the warm
    pools of the hour, plus in a region-loss scenario the ones started after it."""
    found: dict[tuple[int, str, str, str, str], set[str]] = defaultdict(set)
    for hour in plan.hours:
        scenarios = {"none"} | {s.scenario for s in hour.failover_starts}
        for scenario in scenarios:
            for pool in hour.pools:
                key = (hour.hour, scenario, pool.workload, pool.region, str(pool.role))
                found[key].add(pool.key)
        for start in hour.failover_starts:
            pool = start.pool
            key = (hour.hour, start.scenario, pool.workload, pool.region, str(pool.role))
            found[key].add(pool.key)
    return found


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    r1=st.floats(min_value=5.0, max_value=60.0),
    r2=st.floats(min_value=5.0, max_value=60.0),
    h200_price=st.floats(min_value=2.4, max_value=4.0),
    shape=st.sampled_from(SHAPES),
    start_s=st.sampled_from([0.0, 120.0, 600.0]),
    limit=st.sampled_from([1, 2]),
)
# found by a wider run: an H100 pool warm in r2 and an H200 replica started there after
# losing r1, two configurations under a limit of one (before started replicas counted)
@example(
    r1=51.5408580135572,
    r2=32.790610131878026,
    h200_price=3.342403612772083,
    shape=SHAPES[0],
    start_s=120.0,
    limit=1,
)
def test_every_hourly_plan_respects_max_configs_per_pool(r1, r2, h200_price, shape, start_s, limit):
    plan = solve(_instance({"r1": r1, "r2": r2}, h200_price, shape, start_s, limit))
    for key, configs in configs_by_hour(plan).items():
        assert len(configs) <= limit, (key, configs)


def test_the_hour_verifier_counts_started_configurations_against_the_limit():
    """The plan of the example above, one started pool moved to another configuration of
    its GPU type's rival: warm and started together run two configurations."""
    instance = _instance(
        {"r1": 51.5408580135572, "r2": 32.790610131878026}, 3.342403612772083, SHAPES[0], 120.0, 1
    )
    plan = solve(instance)
    hour = next(h for h in plan.hours if h.failover_starts)
    start = hour.failover_starts[0]
    other = next(
        c
        for c in build_candidates(instance).of("chat")
        if c.gpu != start.pool.gpu and c.role == start.pool.role
    )
    moved = start.model_copy(
        update={
            "pool": start.pool.model_copy(
                update={**other.layout_fields, "gpus": start.pool.count * other.gpus}
            )
        }
    )
    broken_hour = hour.model_copy(update={"failover_starts": (moved, *hour.failover_starts[1:])})
    broken = plan.model_copy(
        update={"hours": tuple(broken_hour if h.hour == hour.hour else h for h in plan.hours)}
    )
    check = verify_hours(instance, broken)
    assert any(v.requirement.startswith("configs_per_pool[") for v in check.violations)
