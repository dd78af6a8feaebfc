"""The benchmark class passes the program-size check (issue 16) at the default time limit.

Run by `make bench` only: the 10-region x 20-workload x 6-GPU region-loss instance
(`tests.synthetic.generated`, the class tests/bench/test_candidate_physics.py times)
counted by `solver.candidates.size_check.check_program_size` at 60 s is not refused, and
holds fewer variables than any time limit allows (`VARIABLES_ANY_TIME_LIMIT`). Its
candidate table is ~3.7 s of CPU; the default suite checks the same path on a 6 x 5 x 3
instance (tests/solver/candidates/test_size_check.py)."""

import time

from models.schema import program_limits
from solver.candidates.size_check import check_program_size
from solver.candidates.table import build_candidates
from tests.synthetic import generated


def test_the_benchmark_class_passes_the_check_at_the_default_time_limit(capsys):
    started = time.process_time()
    inst = generated(10, 20, 6, survive="region")
    size = check_program_size(inst, build_candidates(inst), time_limit_s=60.0)
    assert size.complete and size.variables < program_limits.VARIABLES_ANY_TIME_LIMIT
    with capsys.disabled():
        print(
            f"\n10x20x6 region loss: {size.pools:,} pools, {size.routes:,} routes, "
            f"{size.variables:,} of {program_limits.VARIABLES_ANY_TIME_LIMIT:,} variables "
            f"any limit allows; {time.process_time() - started:.2f} s of CPU"
        )
