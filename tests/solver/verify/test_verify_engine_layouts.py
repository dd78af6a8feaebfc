"""The verifier warns of a pool whose layout the profile's engine would start as another
(`models.physics.overlap.engine_layout_problem`), and only warns: the planner never offers
one and deploy refuses it, but a fleet one owns may state one, and its physics is timed as
laid out. moe-ep's Qwen3-235B-A22B on H200 planned on SGLang's profile at TP8 x EP4 (SGLang
runs it); the same plan verified against the instance on vLLM's profile, whose expert
parallelism is EP 1 or every GPU of the stage (8 x 1 = 8), warns of each pool."""

import pytest
import yaml

from models.schema.instance import Instance
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import REPO

MOE_EP = REPO / "instances" / "moe-ep.yaml"


@pytest.fixture(scope="module")
def documents():
    document = yaml.safe_load(MOE_EP.read_text())
    document["policy"].update(tensor_parallel=[8], expert_parallel=[4], attention_data_parallel=[1])
    return (
        Instance.model_validate({**document, "engine": "sglang-0.5"}),
        Instance.model_validate({**document, "engine": "vllm-0.11"}),
    )


def test_a_layout_the_engine_runs_as_another_is_a_warning_not_a_violation(documents):
    sglang, vllm = documents
    plan = solve(sglang)
    assert plan.replicas and all((r.tp, r.dp, r.ep) == (8, 1, 4) for r in plan.replicas)
    assert not [w for w in verify(sglang, plan).warnings if "would run as" in w.message]
    verdict = verify(vllm, plan)
    layout = [w for w in verdict.warnings if "would run as EP8" in w.message]
    assert len(layout) == len(plan.replicas)  # one per pool entry
    assert not [v for v in verdict.violations if "would run as" in v.message]
