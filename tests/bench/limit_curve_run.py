"""One solve of tests/bench/test_limit_curve_bench.py in a fresh interpreter (cold
caches, as the command line starts): the side's switches set, a generated instance at the
policy's defaults solved within the limit, one JSON line on stdout (cost, gap, method,
wall seconds from the start of `solve_program`, or the message of a run with no plan).

    python -m tests.bench.limit_curve_run SIDE REGIONS WORKLOADS GPUS SURVIVE SEED LIMIT
"""

import json
import sys
import time

import solver.decompose.by_workload as by_workload
import solver.decompose.regions.plan as by_region
import solver.decompose.regions.timing as region_time
import solver.decompose.scenario_cuts as scenario_cuts
import solver.stages as stages

BEFORE = {
    (stages, "AFTER_PER_BUILD"): 4.0,
    (scenario_cuts, "LP_ROUNDS_SHARE"): 1.0,
    (by_workload, "FULL_SHARE_WHEN_LITTLE_AFTER"): False,
    (region_time, "FLOORED_ROUNDS"): 0,
    (region_time, "REGION_MIN_S"): 0.0,
    (by_region, "COVERS_FIRST"): False,
}
"""The switches of `before` (main at 3c4b5430); `after` keeps the modules' own values."""


def main(argv: list[str]) -> dict:
    from models.io.loading import validate_instance
    from solver.errors import NoSolution
    from solver.solve import SolveSettings, solve_program
    from tests.synthetic import at_policy_defaults, generated_data

    side, regions, workloads, gpus, survive, seed, limit = argv
    if side == "before":
        for (module, name), value in BEFORE.items():
            setattr(module, name, value)
    data = at_policy_defaults(
        generated_data(int(regions), int(workloads), int(gpus), survive, int(seed))
    )
    inst = validate_instance(data, data["name"])
    settings = SolveSettings.of(inst, time_limit_s=float(limit), mip_gap=1e-3)
    started = time.monotonic()
    try:
        plan = solve_program(inst, settings).plan
    except NoSolution as stopped:
        return {"wall_s": time.monotonic() - started, "result": str(stopped)[:80]}
    return {
        "wall_s": time.monotonic() - started,
        "result": plan.status.split(" (")[0],
        "cost": plan.cost_per_month,
        "gap": plan.solver.mip_gap,
        "method": plan.solver.method,
    }


if __name__ == "__main__":  # spawned workers re-import this module: solve only here
    print(json.dumps(main(sys.argv[1:])))
