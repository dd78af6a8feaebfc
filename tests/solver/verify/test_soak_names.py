"""The hour verifier's soak check (solver.verify.batch, step 2) on a soak record whose
batch the instance lacks: diurnal-chat-batch's plan with hours[21].batch_soak[0].batch
edited to '' (the input fuzz, seed 2803) ended verify and deploy with exit 70
(StopIteration: the batch's mix looked up by its name). It is one violation at the
record; a batch that names an interactive workload ('chat') is one too."""

import pytest

from solver.plan.time_records import BatchSoak, Hour
from solver.verify.batch import _check_shares
from tests.solver.verify.test_soak_with_pairs import INSTANCE, _pool


@pytest.mark.parametrize("batch", ["", "chat", "nightly"])
def test_a_soak_of_no_batch_workload_is_one_violation_naming_it(batch):
    unified = _pool("unified", 2, 5.0)
    soak = BatchSoak(
        batch=batch,
        workload="chat",
        region="us-east",
        configuration=unified.key,
        requests_per_s=1.0,
        batch_requests_per_s_per_replica=1.0,
    )
    hour = Hour(hour=21, period=21, pools=(unified,), batch_soak=(soak,))
    found = _check_shares(INSTANCE, hour, {("chat", "us-east"): (1.0,) * 24}, {})
    named = [v for v in found if v.requirement.startswith("soak[")]
    assert [v.requirement for v in named] == [f"soak[{batch},chat,{unified.key},us-east]@t21"]
    assert named[0].message == (
        f"names batch workload {batch!r}, not one of the instance's batch workloads (summarise)"
    )
