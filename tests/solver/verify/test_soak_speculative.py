"""The hour verifier's batch capacity C_b of a speculating pool (solver.verify.batch,
`batch_replica`) is timed with the pool's speculation, as the planner's soak option times
its candidate (solver.program.families.batch_work._soak_options: the candidate's config,
speculation included). It dropped the speculation, so a valid plan soaking summarise on
an EAGLE-decoding chat pool of diurnal-chat-batch was refused: 'states 3.70583 summarise
requests/s per replica; C_b recomputed is 3.32493' (H100 FP8 TP4, 60 ms p99 TPOT)."""

from dataclasses import replace

import yaml

from models.io.loading import validate_instance
from models.operations.batch_soak import soak_targets
from models.schema.serving_inputs import latency_targets, pool_replica
from solver.candidates.pools import physics_of
from solver.plan.records import ReplicaPool
from solver.plan.time_records import BatchSoak, Hour
from solver.verify.batch import _check_shares, _rate
from tests.paths import INSTANCES

EAGLE = {"name": "eagle", "draft_cost_ratio": 0.05, "tokens": 3, "acceptance_rate": 0.7}


def _instance():
    data = yaml.safe_load((INSTANCES / "diurnal-chat-batch.yaml").read_text())
    data["policy"]["speculative"] = [EAGLE]
    return validate_instance(data, data["name"])


INSTANCE = _instance()
POOL = ReplicaPool(
    workload="chat", region="us-east", gpu="h100-sxm", precision="fp8", tp=4, pp=1, count=2,
    speculative="eagle", requests_per_s_per_replica=5.0,
)  # fmt: skip


def _planners_c_b(config) -> float:
    """What the program credits one replica with: summarise's physics on the pool's
    configuration at chat's TPOT target (the soak option's rate)."""
    beside = latency_targets(INSTANCE.workload("chat").slo)
    own = physics_of(INSTANCE, "summarise", config)
    return replace(own, targets=soak_targets(beside)).at(1).requests_per_s


def test_the_verifiers_c_b_is_the_planners_with_the_pools_speculation():
    config = pool_replica(INSTANCE, POOL)
    assert config.speculation is not None
    assert _rate(INSTANCE, "summarise", POOL, {}) == _planners_c_b(config)
    # the case matters: at a 60 ms p99 TPOT, 2.53 tokens per cycle carry more batch
    assert _planners_c_b(config) > _planners_c_b(replace(config, speculation=None))


def test_a_soak_stating_the_planners_c_b_on_a_speculating_pool_is_accepted():
    c_b = _planners_c_b(pool_replica(INSTANCE, POOL))
    soak = BatchSoak(
        batch="summarise", workload="chat", region="us-east", configuration=POOL.key,
        requests_per_s=c_b, batch_requests_per_s_per_replica=c_b,
    )  # fmt: skip
    hour = Hour(hour=3, period=3, pools=(POOL,), batch_soak=(soak,))
    found = _check_shares(INSTANCE, hour, {("chat", "us-east"): (0.0,) * 24}, {})
    assert [v.requirement for v in found if v.requirement.startswith("soak[")] == []
