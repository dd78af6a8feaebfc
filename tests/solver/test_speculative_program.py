"""`policy.speculative`: the program turns speculation on per pool where the physics says
it pays, the plan names the option, and the verifier recomputes it from the instance."""

import json

import pytest
import yaml

from cli.exit_codes import ExitCode
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.schema.instance import Instance
from solver.candidates.table import build_candidates
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import ONE_MODEL_ONE_REGION
from tests.synthetic import instance, workload

FIXTURE = ONE_MODEL_ONE_REGION

DRAFT_8B = {
    "name": "draft-8b",
    "draft_model": "llama-3.1-8b",
    "tokens": 3,
    "acceptance_rate": 0.7,
}

# The fastest plain TPOT of the layout: its batch-1 decode step at the mean context of
# 1,000-token prompts and 200-token replies (1,000 + 200 / 2), 70B FP8 TP8 on H100.
PLAIN_FLOOR_MS = 1e3 * step_model(
    catalog.gpu("h100-sxm"),
    catalog.llm("llama-3.3-70b"),
    Precision.FP8,
    Precision.FP8,
    8,
    1,
    efficiency_for("h100-sxm", Precision.FP8, None),
).decode_step_s(1.0, 1000 + 200 / 2)
TIGHT_TPOT_MS = 1.25 * PLAIN_FLOOR_MS
LOOSE_TPOT_MS = 60.0


def _chat(speculative: list[dict] | None) -> Instance:
    """Llama 3.3 70B FP8 at TP8 on H100, 20 requests/s each of a tight (1.25 x the
    fastest plain step) and a loose (60 ms) p99 TPOT, 1,000-token prompts and 200-token
    replies."""
    policy = {} if speculative is None else {"speculative": speculative}
    return instance(
        {"east": {"h100-sxm": (400, 2.5)}},
        [
            workload(
                "tight",
                {"east": 20.0},
                model="llama-3.3-70b",
                tpot_p99_ms=TIGHT_TPOT_MS,
                ttft_p99_ms=2000,
            ),
            workload(
                "loose",
                {"east": 20.0},
                model="llama-3.3-70b",
                tpot_p99_ms=LOOSE_TPOT_MS,
                ttft_p99_ms=2000,
            ),
        ],
        tensor_parallel=[8],
        policy=policy,
    )


def test_the_program_speculates_for_the_tight_tpot_pool_and_not_the_loose_one():
    """Why, from the physics (tests/models/physics/test_speculative.py): at batch 1 a cycle of
    three 8B draft steps and one verify pass emits E = 2.533 tokens, so the TPOT falls by a third;
    the verify pass costs 4 positions per sequence, so once the batch is large the cycle
    costs more than E plain steps. A p99 TPOT 1.25 x the batch-1 plain step keeps plain
    decoding to a handful of sequences (~4 under the current efficiencies), where the
    verify pass is weight-bound and speculation carries several times the rate; a 60 ms
    target (~8 x that step) lets plain decoding run ~110 sequences, past the crossover
    (~100), where the plain replica carries more. The program picks each side's cheaper
    pool."""
    inst = _chat([DRAFT_8B])
    table = build_candidates(inst)
    by_key = {w: {c.key: c.requests_per_s for c in table.of(w)} for w in ("tight", "loose")}
    plain_key = "h100-sxm.fp8.tp8pp1.unified"
    spec_key = plain_key + ".spec-draft-8b"
    # dominance keeps only the better of the two variants of the one layout
    assert list(by_key["tight"]) == [spec_key]
    assert list(by_key["loose"]) == [plain_key]

    plan = solve(inst)
    pools = {p.workload: p for p in plan.replicas}
    assert pools["tight"].speculative == "draft-8b"
    assert pools["tight"].key == spec_key
    assert "spec draft-8b" in pools["tight"].label
    assert pools["loose"].speculative is None
    assert verify(inst, plan).ok

    plain_plan = solve(_chat(None))
    plain_tight = next(p for p in plain_plan.replicas if p.workload == "tight")
    assert pools["tight"].count < plain_tight.count  # fewer replicas for the same load
    assert plan.cost_per_month < plain_plan.cost_per_month


def test_no_option_keeps_the_candidates_and_the_plan():
    inst = _chat(None)
    assert inst.policy.speculative == []
    keys = [c.key for c in build_candidates(inst).of("loose")]
    assert all("spec" not in key for key in keys)


def test_the_verifier_refuses_an_undeclared_option():
    inst = _chat([DRAFT_8B])
    plan = solve(inst)
    data = json.loads(plan.model_dump_json())
    for pool in data["replicas"]:
        if pool["workload"] == "tight":
            pool["speculative"] = "medusa"
    report = verify(inst, Plan.model_validate(data))
    assert not report.ok
    assert any("'medusa'" in v.message for v in report.violations)


def test_the_verifier_recomputes_a_claimed_option_from_the_physics():
    """A plan that says the loose pool speculates states a capacity the plain layout has;
    the verifier recomputes the speculating replica and finds it carries less. The verdict
    rests on the requirements (the load still fits the speculating pool here), so the
    overstated capacity is a warning that names the recomputed figure, not a violation."""
    inst = _chat([DRAFT_8B])
    plan = solve(inst)
    data = json.loads(plan.model_dump_json())
    for pool in data["replicas"]:
        if pool["workload"] == "loose":
            pool["speculative"] = "draft-8b"
    report = verify(inst, Plan.model_validate(data))
    loose = [p for p in plan.replicas if p.workload == "loose"]
    assert loose
    assert any("the physics gives" in w.message for w in report.warnings)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({**DRAFT_8B, "draft_cost_ratio": 0.05}, "exactly one of draft_model and draft_cost_ratio"),
        ({**DRAFT_8B, "tokens": 0}, "at least 1"),
        ({**DRAFT_8B, "acceptance_rate": 1.5}, "at most 1"),
        ({**DRAFT_8B, "draft_model": "llama-9b"}, "unknown model 'llama-9b'"),
    ],
)
def test_a_bad_option_is_refused_naming_the_field(tmp_path, run_cli, option, message):
    data = yaml.safe_load(FIXTURE.read_text())
    data["policy"]["speculative"] = [option]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run_cli("validate", str(path))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "speculative" in result.stderr
    assert message in result.stderr
