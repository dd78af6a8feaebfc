"""`latency_at_rate` (perf at a load, simulate's analytic column, the report's latency
curves) and the capacity model agree on a speculating replica, as they do on a plain
one: at the rate the planner credits, the batch, the p99 TPOT and the mean TPOT are the
planner's ("a plan's promised latency and this module agree at the plan's load").

Before: the latency module priced every iteration as a plain decode step one token long
whatever the configuration, so at the tight pool's credited 6.52 requests/s it put the
batch at 13.8 and the p99 TPOT at 12.0 ms where the planner has 9.17 and 9.79 ms (the
target it sized the pool for)."""

from dataclasses import replace

import pytest

from models.physics.efficiency import efficiency_for
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.latency import latency_at_rate
from models.serving.replica import ServingContext
from solver.candidates.table import build_candidates
from tests.solver.test_speculative_program import DRAFT_8B, _chat


@pytest.fixture(scope="module")
def tight():
    """The tight workload's speculating candidate (70B FP8 TP8 on H100, draft 8B, k 3,
    a 0.7) and its plain twin, with the workload's mix, targets and efficiency."""
    inst = _chat([DRAFT_8B])
    (candidate,) = build_candidates(inst).of("tight")
    config = candidate.config
    assert config.speculation is not None
    workload = inst.workload("tight")
    mix = traffic_mix(workload, inst.policy.prefix_affinity)
    efficiency = efficiency_for(config.gpu, config.weight_precision, None, inst.engine)
    return config, mix, latency_targets(workload.slo), efficiency


@pytest.mark.parametrize("speculating", [True, False])
@pytest.mark.parametrize("pool", [1, 4])
def test_at_the_credited_rate_latency_and_capacity_agree(tight, speculating, pool):
    config, mix, targets, efficiency = tight
    if not speculating:
        config = replace(config, speculation=None)
    capacity = replica_capacity(config, mix, targets, efficiency, pool)
    at = latency_at_rate(ServingContext(config, mix, efficiency), capacity.requests_per_s, pool)
    assert not at.saturated
    assert at.batch == pytest.approx(capacity.batch, rel=1e-3)
    assert at.tpot_p99_s == pytest.approx(capacity.tpot_p99_s, rel=1e-3)
    # Little's law on the decode phase: B = R x O x mean TPOT
    output = mix.output_mean_tokens
    assert at.batch == pytest.approx(capacity.requests_per_s * output * at.tpot_mean_s, rel=1e-6)
