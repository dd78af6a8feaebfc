"""One solve of tests/bench/test_first_plan_bench.py in a fresh interpreter: the side's
switches set, then tests/bench/limit_curve_run.py's solve (the modules' own values for
its switches), one JSON line on stdout; with LIMIT `table`, the candidate table alone
(its CPU seconds).

    python -m tests.bench.first_plan_run SIDE REGIONS WORKLOADS GPUS SURVIVE SEED LIMIT

`before` (main at 4b14fd4d): the p99 gap's root by 48 halvings of its bracket in its log
(`_bisected`, as models.serving.tail.reply_life had it; the same root to the bit) and
both limits of a pool solved (`_both`). The side is also read from FIRST_PLAN_SIDE when
this module is imported, so that workers spawned to build the candidates (which import it
again, not run it) are on the same side as this process.
"""

import json
import math
import os
import sys
import time

from models.serving.tail.reply_life import ReplyLife
from tests.bench import limit_curve_run


def _bisected(self: ReplyLife, backlog: tuple[float, float], pooled: bool) -> float:
    """ReplyLife._tail_s before: 48 halvings of [t(B), lane cap] in its log."""
    low, high = self.mean_s, self._lane_cap_s(pooled)
    if high <= low or self._excess(low, backlog, pooled) <= 0:
        return low
    if not self._excess(high, backlog, pooled) <= 0:
        return high
    for _ in range(48):
        middle = math.sqrt(low * high)
        if self._excess(middle, backlog, pooled) <= 0:
            high = middle
        else:
            low = middle
    return high


def _both(self: ReplyLife) -> float:
    """ReplyLife.tail_s before: the larger of the two limits' roots, both solved."""
    backlog = self.backlog()
    alone = self._tail_s(backlog, pooled=False)
    if self.pool == 1:
        return alone
    return max(alone, self._tail_s(backlog, pooled=True))


def _before() -> None:
    ReplyLife._tail_s = _bisected
    ReplyLife.tail_s = _both


if os.environ.get("FIRST_PLAN_SIDE") == "before":
    _before()


def _table(argv: list[str]) -> dict:
    """The candidate table of the case alone: its CPU and wall seconds."""
    from models.io.loading import validate_instance
    from solver.candidates.table import build_candidates
    from tests.synthetic import at_policy_defaults, generated_data

    _, regions, workloads, gpus, survive, seed, _ = argv
    data = at_policy_defaults(
        generated_data(int(regions), int(workloads), int(gpus), survive, int(seed))
    )
    inst = validate_instance(data, data["name"])
    cpu, wall = time.process_time(), time.monotonic()
    table = build_candidates(inst)
    kept = sum(len(c) for c in table.by_workload.values())
    return {
        "wall_s": time.monotonic() - wall,
        "cpu_s": time.process_time() - cpu,
        "result": f"{kept} candidates",
    }


def main(argv: list[str]) -> dict:
    if argv[0] == "before":
        _before()
    if argv[-1] == "table":
        return _table(argv)
    return limit_curve_run.main(["after", *argv[1:]])


if __name__ == "__main__":  # spawned workers re-import this module: solve only here
    print(json.dumps(main(sys.argv[1:])))
