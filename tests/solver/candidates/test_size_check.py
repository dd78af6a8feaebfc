"""Program size told up front (issue 16): the configuration count and the program's
variables are counted before the work they measure, match what the candidate table and
the program then hold, and an instance beyond a limit is refused with the numbers (exit
2 for a work limit, exit 4 for a program the time limit cannot cover)."""

import pytest

from models.io.loading import load_instance
from models.schema import limits, program_limits
from solver.candidates.layouts import configurations
from solver.candidates.size_check import (
    check_program_size,
    count_configurations,
    measure_program,
)
from solver.candidates.table import build_candidates
from solver.program.build import build_program
from tests.cli.test_hostile_input import run_checked
from tests.paths import DEFAULT_INSTANCE
from tests.synthetic import generated, instance, workload


@pytest.fixture(scope="module")
def generated_6_5_3():
    """survive -> (instance, candidate table) of `generated(6, 5, 3, survive=survive)`,
    each built once for this module (two tests read the `region` one, and building the
    table is most of each). 180 pools and 27 routes (743 under region loss): the counts
    ask what a 10 x 10 x 4 instance's 750 pools asked, at a fifth of the CPU (2.6 s with
    the table and program of both)."""
    tables = {}

    def of(survive: str):
        if survive not in tables:
            inst = generated(6, 5, 3, survive=survive)
            tables[survive] = inst, build_candidates(inst)
        return tables[survive]

    return of


@pytest.fixture(scope="module")
def default_size():
    """(instance, measured program size) of the default instance, for the two tests that
    set a limit from its pools (its candidate table built once)."""
    inst = load_instance(DEFAULT_INSTANCE)
    return inst, measure_program(inst, build_candidates(inst))


def test_configurations_are_counted_as_a_product_without_building_them():
    # 2 GPU types x 2 precisions (fp8, bf16: both run on H100 and H200) x TP {1, 2, 4, 8}
    # (Llama 3.1 8B has 32 heads: all divide) x PP {1, 2} x 1 layout x 3 roles
    inst = instance(
        {"east": {"h100-sxm": (64, 2.0), "h200": (64, 3.0)}},
        [workload("chat", {"east": 10.0})],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
        tensor_parallel=[1, 2, 4, 8],
        pipeline_parallel=[1, 2],
        disaggregation=True,
    )
    assert count_configurations(inst) == 2 * 2 * 4 * 2 * 1 * 3
    assert count_configurations(inst) == len(configurations(inst, inst.workloads[0]))


def test_workloads_of_one_model_mix_and_targets_are_evaluated_once():
    one = instance({"east": {"h100-sxm": (64, 2.0)}}, [workload("a", {"east": 1.0})])
    two = instance(
        {"east": {"h100-sxm": (64, 2.0)}},
        [workload("a", {"east": 1.0}), workload("b", {"east": 5.0})],
    )
    assert count_configurations(two) == count_configurations(one)


@pytest.mark.parametrize("survive", ["none", "region"])
def test_the_counted_program_is_the_built_one(survive, generated_6_5_3):
    inst, table = generated_6_5_3(survive)
    size = measure_program(inst, table)
    program = build_program(inst, table)
    sets = program.sets
    assert size.complete
    assert size.pools == len(sets.pools)
    assert size.routes == sum(len(pairs) for pairs in sets.routes.values())
    assert size.variables <= program.lp.size()["variables"]


def test_a_program_within_the_limits_passes_the_check_with_its_whole_count(generated_6_5_3):
    """Under both limits the check counts to the end and refuses nothing: the size it
    returns is measure_program's. (The benchmark class, 10 x 20 x 6 under region loss,
    passes it at 60 s too: tests/bench/test_benchmark_class_size.py, ~3.7 s of CPU.)"""
    inst, table = generated_6_5_3("region")
    size = check_program_size(inst, table, time_limit_s=60.0)
    assert size.complete and size.variables < program_limits.VARIABLES_ANY_TIME_LIMIT
    assert size == measure_program(inst, table)


def test_counting_stops_at_the_limit(generated_6_5_3):
    inst, table = generated_6_5_3("region")
    whole = measure_program(inst, table)
    stopped = measure_program(inst, table, stop_at=whole.pools + 10)
    assert not stopped.complete
    assert whole.pools + 10 < stopped.variables < whole.variables


def test_a_program_beyond_the_time_limit_exits_4_with_the_numbers(
    run_cli, monkeypatch, default_size
):
    _, size = default_size
    # the floor and the rate lowered so that a 600 s limit allows what the pools hold
    # (600 x pools / 600): a limit no stage before the check reaches on a loaded machine,
    # where a 2 s one ended in the candidates ('time limit of 2 s reached in candidates
    # after 3.0 s', at a load of ~12 on 2 cores)
    monkeypatch.setattr(program_limits, "VARIABLES_ANY_TIME_LIMIT", 1)
    monkeypatch.setattr(program_limits, "VARIABLES_PER_SOLVER_S", size.pools / 600)
    result = run_checked(
        run_cli,
        "solve",
        DEFAULT_INSTANCE,
        "--time-limit",
        "600",
        code=4,
        needles=(
            "no plan:",
            "not started: the program would hold at least",
            f"variables ({size.pools:,} replica counts over",
            "more than a backend solves in 600 s",
        ),
    )
    assert "raise --time-limit" in result.stderr


def test_a_program_beyond_the_build_limit_exits_2(run_cli, monkeypatch, default_size):
    pools = default_size[1].pools
    assert pools > 20  # the pools alone pass the limit: counting stops before any route
    monkeypatch.setattr(
        program_limits, "PROGRAM_VARIABLES", limits.Most(20, "program variables", "a test limit")
    )
    run_checked(
        run_cli,
        "solve",
        DEFAULT_INSTANCE,
        needles=(
            f"the program would hold at least {pools:,} variables ({pools:,} replica counts",
            "at most 20 program variables",
        ),
    )


def test_too_many_configurations_exit_2_before_any_physics(run_cli, monkeypatch):
    inst = load_instance(DEFAULT_INSTANCE)
    count = count_configurations(inst)
    monkeypatch.setattr(
        program_limits, "CONFIGURATIONS", limits.Most(count - 1, "configurations", "a test limit")
    )
    monkeypatch.setattr(
        "solver.simplicity.build_candidates",
        lambda *_: pytest.fail("the physics ran before the configuration count was checked"),
    )
    run_checked(
        run_cli,
        "solve",
        DEFAULT_INSTANCE,
        needles=(f"{count:,} configurations", f"at most {count - 1:,}"),
    )
