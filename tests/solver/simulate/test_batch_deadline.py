"""A dedicated batch pool in `simulate`: a deadline, not a latency SLO, checked by the
throughput arithmetic over the replayed day (solver.simulate.batch_deadline), where the
replay said 'nothing to replay' and checked nothing.

Hand case: 20,000,000 summarise requests a day arriving at a flat rate, a 12 h deadline,
dedicated TP1 replicas at a stated q = 14 requests/s each, the same count every hour."""

import pytest
import yaml

from models.io.loading import validate_instance
from solver.plan.records import ReplicaPool
from solver.plan.time_records import Hour
from solver.simulate.batch_deadline import batch_deadlines, dedicated_batch

VOLUME, Q, SECONDS_PER_DAY = 20_000_000, 14.0, 86_400

INSTANCE = """
name: batch-deadline
gpus: [{name: h100-sxm}]
models: [{name: llama-3.1-8b, weight_precisions: [fp8]}]
regions:
  - name: east
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.4}}
workloads:
  - name: summarise
    model: llama-3.1-8b
    deadline_hours: 12
    demand: {east: {requests_per_day: 20000000}}
    prompt_tokens: {mean: 3000, p99: 8000}
    output_tokens: {mean: 300, p99: 800}
policy: {survive: none, tensor_parallel: [1]}
"""


def _day(replicas: int) -> tuple[Hour, ...]:
    pool = ReplicaPool(
        workload="summarise",
        region="east",
        gpu="h100-sxm",
        precision="fp8",
        tp=1,
        pp=1,
        count=replicas,
        gpus=replicas,
        requests_per_s_per_replica=Q,
    )
    return tuple(Hour(hour=h, period=h, pools=(pool,)) for h in range(24))


@pytest.fixture(scope="module")
def instance():
    return validate_instance(yaml.safe_load(INSTANCE), "batch-deadline.yaml")


def test_enough_replicas_meet_the_deadline(instance):
    day = _day(17)
    (check,) = batch_deadlines(instance, day[9].pools, day, 9, None)
    assert check.replicas == 17
    assert check.requests_per_s == pytest.approx(17 * Q)  # 238 requests/s this hour
    assert check.requests_per_day == pytest.approx(VOLUME)
    # 17 x 14 x 86,400 = 20,563,200 a day, above the 20,000,000 arriving at the same rate
    assert check.capacity_per_day == pytest.approx(17 * Q * SECONDS_PER_DAY)
    assert check.volume_over_capacity == pytest.approx(VOLUME / (17 * Q * SECONDS_PER_DAY))
    assert check.met and "deadline met" in check.words
    assert "nothing to replay" not in check.words and "12 h deadline" in check.words


def test_one_replica_short_misses_by_the_arithmetic(instance):
    day = _day(16)
    (check,) = batch_deadlines(instance, day[9].pools, day, 9, None)
    # 16 x 14 x 86,400 = 19,353,600 a day: 20,000,000 - 19,353,600 = 646,400 late
    assert check.missed_requests_per_day == pytest.approx(VOLUME - 16 * Q * SECONDS_PER_DAY)
    assert not check.met and "DEADLINE MISSED: 646,400 requests a day late" in check.words


def test_a_static_fleet_runs_every_hour_as_replayed(instance):
    (check,) = batch_deadlines(instance, _day(17)[0].pools, (), None, None)
    assert check.capacity_per_day == pytest.approx(17 * Q * SECONDS_PER_DAY)
    assert check.met


def test_only_a_batch_workloads_own_pools_are_checked(instance):
    pool = _day(17)[0].pools[0]
    assert dedicated_batch(instance, pool)
    assert not dedicated_batch(instance, pool.model_copy(update={"workload": "chat"}))
    assert batch_deadlines(instance, (), _day(17), 9, None) == ()
