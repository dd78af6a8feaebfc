"""Deploy refuses a pool whose layout its target engine would start as another
(`solver.deploy.engines.layout_problems`, the rule `models.physics.overlap.
engine_layout_problem`): a plan made on another engine's profile, or written by hand.

moe-ep's Qwen3-235B-A22B on H200, planned on SGLang's profile held to TP8 x EP4 (SGLang
runs it: --ep-size 4 splits each expert over the other 8 / 4 = 2 GPUs): vLLM given
--enable-expert-parallel would run every one of the 8 GPUs as an expert rank (EP8), and
the k8s, llm-d and Dynamo manifests launch vLLM. The same replicas rewritten by hand to TP2
x attention DP4 x EP4 (still 2 x 4 = 8 GPUs): TensorRT-LLM, launched with --tp_size 8 and
attention DP, would run the attention at TP1 x DP8. One solve, well under a second."""

import pytest
import yaml

from models.schema.instance import Instance
from solver.deploy.files import deploy_files
from solver.deploy.pools import DeployError
from solver.solve import solve
from tests.paths import REPO

MOE_EP = REPO / "instances" / "moe-ep.yaml"


@pytest.fixture(scope="module")
def sglang_tp8_ep4(tmp_path_factory):
    """(instance file, instance, plan) on sglang-0.5 at TP8 x DP1 x EP4."""
    document = yaml.safe_load(MOE_EP.read_text())
    document["engine"] = "sglang-0.5"
    document["policy"].update(tensor_parallel=[8], expert_parallel=[4], attention_data_parallel=[1])
    path = tmp_path_factory.mktemp("moe") / "moe-ep-sglang.yaml"
    path.write_text(yaml.safe_dump(document))
    instance = Instance.model_validate(document)
    return path, instance, solve(instance)


@pytest.mark.parametrize("target", ["vllm", "k8s", "llm-d", "dynamo"])
def test_a_tp8_ep4_pool_is_refused_where_vllm_runs_it(sglang_tp8_ep4, target):
    _, instance, plan = sglang_tp8_ep4
    assert plan.replicas and all((r.tp, r.dp, r.ep) == (8, 1, 4) for r in plan.replicas)
    with pytest.raises(DeployError) as refused:
        deploy_files(instance, plan, target)
    message = str(refused.value)
    # EP = TP x DP = 8 x 1 = 8 is the only expert split vLLM's switch gives
    assert "(TP8 x DP1 x EP4)" in message and "would run as EP8" in message


@pytest.mark.parametrize("target", ["sglang", "trtllm"])
def test_a_tp8_ep4_pool_deploys_where_the_engine_runs_it(sglang_tp8_ep4, target):
    """SGLang --ep-size 4 (moe_tp 8 / 4 = 2); TensorRT-LLM --ep_size 4 (moe_tp x moe_ep =
    2 x 4 = tp_size 8)."""
    _, instance, plan = sglang_tp8_ep4
    scripts = [
        text for name, text in deploy_files(instance, plan, target).items() if name.endswith(".sh")
    ]
    flag = "--ep-size 4" if target == "sglang" else "--ep_size 4"
    assert scripts and all(flag in text for text in scripts)


def test_a_hand_written_tp2_dp4_pool_is_refused_by_trtllm_and_deployed_by_sglang(sglang_tp8_ep4):
    _, instance, plan = sglang_tp8_ep4
    written = plan.model_copy(
        update={"replicas": [r.model_copy(update={"tp": 2, "dp": 4}) for r in plan.replicas]}
    )
    with pytest.raises(DeployError, match=r"TP2 x attention DP4 would run as TP1 x attention DP8"):
        deploy_files(instance, written, "trtllm")
    with pytest.raises(DeployError, match=r"would run as EP8"):  # 4 is neither 1 nor 2 x 4
        deploy_files(instance, written, "vllm")
    scripts = [
        text
        for name, text in deploy_files(instance, written, "sglang").items()
        if name.endswith(".sh")
    ]
    # SGLang's TP size is the stage's 2 x 4 = 8 GPUs, split into 4 attention groups
    assert scripts and all(
        "--tp-size 8" in t and "--dp-size 4" in t and "--ep-size 4" in t for t in scripts
    )


def test_the_cli_exits_2_naming_the_pool_and_writes_nothing(run_cli, sglang_tp8_ep4, tmp_path):
    path, _, plan = sglang_tp8_ep4
    plan_file, out = tmp_path / "plan.json", tmp_path / "out"
    plan_file.write_text(plan.model_dump_json())
    result = run_cli("deploy", plan_file, "--instance", path, "--target", "vllm", "-o", out)
    assert result.exit_code == 2, result.stderr
    assert "TP8 x DP1 x EP4" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists() or not any(out.iterdir())
