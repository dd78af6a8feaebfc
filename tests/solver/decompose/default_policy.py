"""Generated instances at the policy's defaults for the decomposition tests: a program
that buys whole servers (one configuration per pool) and its workloads' exact parts."""

from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import build_candidates
from solver.decompose.join_values import joined_values
from solver.decompose.workload_parts import workload_program
from solver.program.build import FleetProgram, build_program
from solver.program.lp import SolveResult
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.synthetic import at_policy_defaults, generated_data

EXACT = SolveSettings(time_limit_s=60.0, mip_gap=0.0)


def default_policy_parts(
    seed: int, regions: int = 3, workloads: int = 2, gpu_types: int = 2
) -> tuple[FleetProgram, dict[tuple[str, ...], SolveResult]]:
    """A generated instance surviving a region loss at the policy's defaults (whole
    servers, one configuration per pool), its program and each workload's part solved
    exactly, by part."""
    data = generated_data(regions, workloads, gpu_types, survive="region", seed=seed)
    at_policy_defaults(data)
    instance = validate_instance(data, data["name"])
    table = build_candidates(instance, EXACT)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    program = build_program(instance, table, sets=sets)
    highs = get_backend("highs")
    results = {
        (w,): highs.run(reduced_program(workload_program(program, (w,))), EXACT)
        for w in sets.workloads
    }
    return program, results


def default_policy_join(seed: int) -> tuple[FleetProgram, dict[str, float]]:
    """`default_policy_parts`' 3-region, 2-workload, 2-GPU-type program and the parts'
    join (each workload's exact optimum, purchases rounded on the sum)."""
    program, results = default_policy_parts(seed)
    values, _ = joined_values(program, list(results), results)
    return program, values
