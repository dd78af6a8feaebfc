"""The pool property at every pool size: q(n), the capacity per replica at the SLO in a
pool of n behind one router, never falls as n grows, at every n in 1..64, over the 72
combinations of tests/models/serving/test_reply_life.py's property (8B TP1 and 70B TP2
on H100 at FP8; replies 2/2, 3/8, 5/40, 3/4000, 20/60, 300/900 tokens; prompts 200/600,
1500/4500, 4000/16000; TPOT 30 and 50 ms; TTFT 0.8 s, 2 s for the longest prompts).

Why every n: the solver credits a pool of n >= P the capacity of P (the ladder) and, after
a region loss, warm n x q(n) + started k x q'(1) (solver.program.families.failover_start):
both are lower bounds only if q is non-decreasing at every size, while the unit property
samples the powers of two. The unit suite scans every n for the four combinations that
came closest (tests/models/serving/test_reply_life.py, POOL_SCAN).

Measured (stop 27; load 3.7-4.2 on two cores): 72 x 64 capacities in 28-38 s, no fall; the
smallest q(n + 1) / q(n) is 1 - 7.7e-13 (flat steps where a cap binds: rounding), on 70B
replies 20 / 60 tokens, prompts 4,000 / 16,000, TPOT 30 ms.
"""

import itertools
import time

from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role
from tests.models.serving.test_reply_life import _mix

FP8 = Precision.FP8
MODELS = (("llama-3.1-8b", 1), ("llama-3.1-70b", 2))
OUTPUTS = ((2, 2), (3, 8), (5, 40), (3, 4000), (20, 60), (300, 900))
PROMPTS = ((200, 600), (1500, 4500), (4000, 16000))
TPOTS_S = (0.03, 0.05)
SIZES = range(1, 65)


def test_the_capacity_per_replica_never_falls_at_any_pool_size_of_any_combination():
    started = time.perf_counter()
    falls = []
    closest = (2.0, None)
    for (name, tp), output, prompt, tpot_s in itertools.product(MODELS, OUTPUTS, PROMPTS, TPOTS_S):
        config = ReplicaConfig(gpu("h100-sxm"), llm(name), FP8, FP8, tp, 1, Role.UNIFIED)
        mix = _mix(*prompt, output=output[0], output_p99=output[1])
        targets = LatencyTargets(0.8 if prompt[0] < 4000 else 2.0, tpot_s)
        efficiency = efficiency_for(config.gpu, FP8)
        q = [replica_capacity(config, mix, targets, efficiency, n).requests_per_s for n in SIZES]
        case = (name, output, prompt, tpot_s)
        for n, (a, b) in enumerate(itertools.pairwise(q), start=1):
            if a > 0:
                closest = min(closest, (b / a, (*case, n + 1)))
            if b < a * (1 - 1e-9):
                falls.append((*case, n + 1, a, b))
    wall_s = time.perf_counter() - started
    combinations = len(MODELS) * len(OUTPUTS) * len(PROMPTS) * len(TPOTS_S)
    print(
        f"\n{combinations} combinations x {len(SIZES)} pool sizes in {wall_s:.1f} s; "
        f"smallest q(n + 1) / q(n) {closest[0]:.15f} at {closest[1]}"
    )
    assert falls == []
