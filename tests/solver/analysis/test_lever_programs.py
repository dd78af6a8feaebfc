"""A lever whose program is the base plan's own is not solved again, and answers as
solving it would."""

import pytest
import yaml

from models.io.loading import load_instance, validate_instance
from solver import solve as solve_module
from solver.analysis import lever_solve
from solver.analysis.lever_edits import allow_gpu, looser_slo
from solver.analysis.lever_programs import (
    SAME_PROGRAM_NOTE,
    UNUSED_OFFER_NOTE,
    BaseProgram,
    offers_nothing,
    program_digest,
    static_program,
    unused_offers,
)
from solver.analysis.lever_solve import solve_lever
from solver.program.lp import LinearProgram, Sense
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.stages import candidate_table
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION


def _program(order: tuple[str, ...], coefficient: float = 2.0) -> LinearProgram:
    lp = LinearProgram("p")
    for name in order:
        lp.add_variable(name, upper=4.0, integer=True)
    lp.add_constraint("cover", "demand", {"x": coefficient, "y": 1.0}, Sense.GE, 3.0)
    lp.add_objective({"x": 5.0, "y": 3.0})
    return lp


def test_the_digest_is_what_the_program_is_not_how_it_was_written():
    # the same columns added in another order: the same program
    assert program_digest(_program(("x", "y"))) == program_digest(_program(("y", "x")))
    # one coefficient moved, one bound, one cost: another program each
    assert program_digest(_program(("x", "y"), 2.5)) != program_digest(_program(("x", "y")))
    looser = _program(("x", "y"))
    looser.variables["y"] = type(looser.variables["y"])("y", upper=5.0, integer=True)
    assert program_digest(looser) != program_digest(_program(("x", "y")))
    dearer = _program(("x", "y"))
    dearer.add_objective({"y": 1.0})
    assert program_digest(dearer) != program_digest(_program(("x", "y")))


def test_a_lever_whose_program_is_the_base_answers_with_the_base_plan():
    # region-loss-2: every candidate meets its TTFT target with room to spare, so a 20%
    # looser target moves no capacity: the lever's program is the base's own
    instance = load_instance(INSTANCES / "region-loss-2.yaml")
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base = BaseProgram.of(solved.program.lp, solved.plan)
    settings = SolveSettings.of(instance, threads=1).started()
    rebuilt = static_program(instance, candidate_table(instance, settings), settings)
    assert program_digest(rebuilt) == base.digest  # the base's program, built again
    looser = looser_slo("ttft_p99_ms")(instance)
    cost = solved.plan.cost_per_month
    kept = solve_lever("TTFT +20%", looser, cost, None, base_program=base)
    assert kept.note == SAME_PROGRAM_NOTE
    assert (kept.cost_per_month, kept.saving_per_month, kept.status) == (cost, 0.0, "solved")
    assert (kept.total_gpus, kept.servers) == (solved.plan.total_gpus, base.servers)
    alone = solve_lever("TTFT +20%", looser, cost, None)  # solved as before: the same
    assert alone.note == "" and alone.status == "solved"
    assert alone.cost_per_month == pytest.approx(cost, rel=instance.solver.mip_gap)
    # a base plan not proven within its gap answers for no lever
    unproven = solved.plan.model_copy(update={"status": "feasible"})
    assert not unproven.optimal and BaseProgram.of(solved.program.lp, unproven) is None


def _no_solve(*args, **kwargs):
    raise AssertionError("the lever was re-solved")


@pytest.mark.parametrize("hourly", [False, True])
def test_a_gpu_lever_whose_type_serves_nothing_answers_with_the_base_plan(hourly, monkeypatch):
    # one fp8-only 8B model on h100 (tests/fixtures): an a100 computes no fp8, so no
    # configuration on it serves a workload and 'allow a100-80gb-sxm' leaves the
    # candidate table as it is; the base plan answers for it, static or hourly (a flat
    # day with a batch workload beside: the periods program's re-solve, whose solved
    # program is the peak period's, without the batch's candidates), without a solve
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text())
    if hourly:
        chat = data["workloads"][0]
        chat["demand"]["us-east"]["hourly_profile"] = [1.0] * 24
        batch = {**chat, "name": "batch", "deadline_hours": 12, "slo": {}}
        data["workloads"].append({**batch, "demand": {"us-east": {"requests_per_day": 1000}}})
    instance = validate_instance(data, "one-model-one-region")
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    lp, table = solved.program.lp, solved.program.sets.table
    unused = unused_offers(instance, solved.plan, lp, table, None)
    cost = solved.plan.cost_per_month
    settings = SolveSettings.of(instance, threads=1)
    a100 = allow_gpu("a100-80gb-sxm")(instance)
    assert offers_nothing(candidate_table(a100, settings), unused[0])
    h200 = allow_gpu("h200")(instance)  # computes fp8: its configurations join the table
    assert not offers_nothing(candidate_table(h200, settings), unused[0])
    alone = solve_lever("allow a100-80gb-sxm", a100, cost, None)  # solved: the same plan
    assert (alone.cost_per_month, alone.status) == (cost, "solved")
    monkeypatch.setattr(lever_solve, "solve_program", _no_solve)
    kept = solve_lever("allow a100-80gb-sxm", a100, cost, None, unused=unused)
    assert kept.note == UNUSED_OFFER_NOTE
    assert (kept.cost_per_month, kept.saving_per_month, kept.status) == (cost, 0.0, "solved")
    assert kept.total_gpus == solved.plan.total_gpus
    # a base plan not proven within its gap answers for no lever
    unproven = solved.plan.model_copy(update={"status": "feasible"})
    assert unused_offers(instance, unproven, lp, table, None) is None


def test_a_lever_compared_with_the_base_is_built_once(monkeypatch):
    # 'allow h200' on one fp8 8B model on h100 (tests/fixtures): h200's configurations
    # join the table, so its program is not the base's and it is solved; the program
    # built to compare it with the base is the one solved (one build, not two), and the
    # answer is the lever's own solve's
    instance = validate_instance(yaml.safe_load(ONE_MODEL_ONE_REGION.read_text()), "one")
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base = BaseProgram.of(solved.program.lp, solved.plan)
    cost = solved.plan.cost_per_month
    h200 = allow_gpu("h200")(instance)
    alone = solve_lever("allow h200", h200, cost, None)
    builds = []
    built = solve_module.build_program
    monkeypatch.setattr(
        solve_module, "build_program", lambda *a, **k: builds.append(1) or built(*a, **k)
    )
    compared = solve_lever("allow h200", h200, cost, None, base_program=base)
    assert len(builds) == 1
    assert compared.note != SAME_PROGRAM_NOTE
    assert (compared.cost_per_month, compared.status) == (alone.cost_per_month, alone.status)
    assert compared.total_gpus == alone.total_gpus
