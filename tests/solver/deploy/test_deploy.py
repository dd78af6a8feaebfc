"""fleetplan deploy's library (solver/deploy): every flag and key written is one the
target's stored reference lists, every Kubernetes object survives the kubernetes client's
model classes unchanged, the replica split and the scaling thresholds follow their rules,
and the Kubernetes objects read back to a fleet the verifier accepts.

The default instance, its plan and pools are conftest's (solved once a run)."""

import dataclasses
import json
import math
import shlex

import pytest
import yaml

from models.operations.autoscaling import scaling_thresholds
from models.serving.replica_layout import replica_memory_budget
from solver.deploy.engines import (
    sglang_command,
    trtllm_command,
    trtllm_options,
    vllm_command,
)
from solver.deploy.files import TARGETS, deploy_files
from solver.deploy.fleet_import import (
    FleetImportError,
    fleet_plan,
    owned_gpus,
    pools_from_csv,
    pools_from_kubernetes,
    with_existing,
)
from solver.deploy.manifests import dynamo_graph, kubernetes_objects, llm_d_values
from solver.deploy.pools import (
    POOL_NAME_CHARS,
    DeployError,
    Speculative,
    deploy_pools,
    dns_name,
    normal_loads,
)
from solver.deploy.references import reference, unknown_flags, unknown_keys
from solver.plan.records import GroupMember, ReplicaPool
from solver.plan.schema import Plan
from solver.verify.fleet import verify
from solver.verify.pools import recompute_pools
from tests.paths import DEFAULT_INSTANCE


def _variants(pools):
    """The plan's pools and, per pool, one with every option the default plan lacks: EP
    and attention DP (and EP72 with 32 redundant experts, and EP8 with two-batch overlap
    in prefill and in decode), speculation by a draft model
    and by EAGLE heads, bf16 and fp4 weights, prefix caching with DRAM and SSD tiers, a
    replica over two nodes."""
    base = pools[0]
    return [
        *pools,
        dataclasses.replace(base, ep=8, dp=8, tp=1, gpus_per_replica=8),
        *(
            dataclasses.replace(
                base, ep=8, dp=8, tp=1, gpus_per_replica=8, two_batch_overlap=True, role=role
            )
            for role in ("prefill", "decode")
        ),
        dataclasses.replace(
            base, ep=72, dp=72, tp=1, redundant_experts=32, expert_slots=288, gpus_per_replica=72
        ),
        dataclasses.replace(base, speculative=Speculative("draft", 4, "llama-3.2-1b")),
        dataclasses.replace(base, role="unified", speculative=Speculative("eagle", 3, None)),
        dataclasses.replace(base, precision="bf16", kv_precision="bf16", role="unified"),
        dataclasses.replace(base, precision="fp4", role="decode"),
        dataclasses.replace(
            base, role="unified", prefix_caching=True, kv_tiers=("hbm", "dram", "ssd")
        ),
        dataclasses.replace(base, tp=8, pp=2, gpus_per_replica=16),
    ]


# --- engines against their stored references -------------------------------------------


def test_every_reference_names_its_source():
    for name in ("vllm", "sglang", "trtllm", "llm-d", "dynamo", "lws"):
        source = reference(name)["source"]
        assert source["repository"] and source["path"]
        assert len(source["commit"]) == 40 and int(source["commit"], 16) >= 0


@pytest.mark.parametrize(
    ("engine", "command"), [("vllm", vllm_command), ("sglang", sglang_command)]
)
def test_engine_flags_are_in_the_stored_reference(pools, engine, command):
    for pool in _variants(pools):
        assert unknown_flags(engine, command(pool)) == [], pool.name


def test_trtllm_flags_and_options_are_in_the_stored_reference(pools):
    allowed = reference("trtllm")["extra_options"]
    choices = reference("trtllm")["extra_choices"]
    for pool in _variants(pools):
        assert unknown_flags("trtllm", trtllm_command(pool)) == [], pool.name
        for key, value in trtllm_options(pool).items():
            assert key in allowed, key
            if isinstance(value, dict):
                assert set(value) <= set(allowed[key]), (key, value)
                for field, chosen in value.items():
                    assert field not in choices or chosen in choices[field], (field, chosen)


def test_a_flag_outside_the_reference_is_caught():
    """The check can fail: a misspelt flag and a value outside the choices."""
    problems = unknown_flags("vllm", ["vllm", "serve", "m", "--tensor-parallel", "2"])
    assert problems == ["--tensor-parallel is not a vllm flag"]
    assert unknown_flags("vllm", ["--kv-cache-dtype", "fp4"]) != []
    assert unknown_flags("vllm", ["--speculative-config", '{"num_draft_tokens": 3}']) != []
    assert unknown_flags("vllm", ["--kv-transfer-config", '{"kv_role": "kv_sender"}']) != []


def _value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_engine_arguments_reproduce_the_pool(pools):
    """Each engine is told the planned layout, batch cap, chunk and context."""
    for pool in pools:
        vllm, sglang = vllm_command(pool), sglang_command(pool)
        assert _value(vllm, "--tensor-parallel-size") == str(pool.tp)
        assert _value(sglang, "--tp-size") == str(pool.tp * pool.dp)  # every GPU of a stage
        assert _value(vllm, "--pipeline-parallel-size") == str(pool.pp)
        assert _value(vllm, "--max-num-seqs") == _value(sglang, "--max-running-requests")
        assert int(_value(vllm, "--max-num-seqs")) == pool.max_batch >= 1
        assert _value(vllm, "--max-num-batched-tokens") == str(pool.tokens_per_iteration)
        # the default instance: p99 prompt 6,000 + p99 output 1,200 = 7,200 tokens
        assert _value(vllm, "--max-model-len") == "7200"
        if pool.role != "unified":
            assert pool.pair is not None
            assert json.loads(_value(vllm, "--kv-transfer-config"))["kv_connector"] == (
                "NixlConnector"
            )
            assert _value(sglang, "--disaggregation-mode") == pool.role


def test_attention_dp_is_laid_out_as_each_engine_counts_it(pools):
    """DEP8 (TP1 x attention DP8 x EP8). vLLM: one engine per DP rank, TP1 each, DP8.
    SGLang: --tp-size is every GPU, 1 x 8 = 8, split into --dp-size 8 groups (its check:
    8 % 8 == 0), and each group's chunk is --chunked-prefill-size / 8, so that is the
    plan's chunk x 8. TensorRT-LLM: --tp_size 8 --ep_size 8 with enable_attention_dp.
    Before, SGLang got --tp-size 1 --dp-size 8, which it refuses (1 % 8 != 0)."""
    dep8 = dataclasses.replace(pools[0], tp=1, dp=8, ep=8, gpus_per_replica=8)
    vllm, sglang, trtllm = vllm_command(dep8), sglang_command(dep8), trtllm_command(dep8)
    assert _value(vllm, "--tensor-parallel-size") == "1"
    assert _value(vllm, "--data-parallel-size") == "8"
    assert _value(sglang, "--tp-size") == _value(sglang, "--dp-size") == "8"
    assert int(_value(sglang, "--tp-size")) % int(_value(sglang, "--dp-size")) == 0
    assert int(_value(sglang, "--chunked-prefill-size")) == dep8.chunked_prefill_tokens * 8
    assert _value(trtllm, "--tp_size") == _value(trtllm, "--ep_size") == "8"
    assert trtllm_options(dep8)["enable_attention_dp"] is True


def test_every_engine_is_given_the_plans_memory_split(instance, plan, pools):
    """The server keeps what the plan kept, whatever the engine's own default: the
    default instance runs the default (TensorRT-LLM) profile, reserve 5% of each GPU, so
    vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static read 1 - 0.05 =
    0.95 (SGLang's own default would keep 16.4% of an H100 and leave less KV cache than
    the plan's batch needs). TensorRT-LLM's free_gpu_memory_fraction f is a share of what
    weights W and activations A leave: f x (HBM - W - A) must be the KV room the capacity
    model sized the batch on (MemoryBudget.kv_room_bytes_per_gpu, HBM - W - A - 0.05 HBM)."""
    budgets = {
        (p.config.gpu.name, p.config.tp, p.config.pp, str(p.role)): (
            replica_memory_budget(p.config, p.efficiency)
        )
        for p in recompute_pools(instance, plan, [], [])
    }
    for pool in pools:
        assert pool.memory_reserve_fraction == 0.05
        assert _value(vllm_command(pool), "--gpu-memory-utilization") == "0.95"
        assert _value(sglang_command(pool), "--mem-fraction-static") == "0.95"
        budget = budgets[(pool.gpu, pool.tp, pool.pp, pool.role)]
        left = budget.hbm_bytes_per_gpu - budget.weight_bytes_per_gpu
        left -= budget.activation_bytes_per_gpu
        assert pool.kv_free_fraction * left == pytest.approx(budget.kv_room_bytes_per_gpu)
        written = trtllm_options(pool)["kv_cache_config"]["free_gpu_memory_fraction"]
        # four decimals, rounded down: never more of the GPU than the plan left
        assert pool.kv_free_fraction - 1e-4 < written <= pool.kv_free_fraction


def test_a_memory_share_is_rounded_down_never_up():
    from solver.deploy.engines import _fraction

    assert _fraction(1 - 0.05) == "0.95"  # (1 - 0.05) x 10^4 = 9,500.000000000002
    assert _fraction(0.83599) == "0.8359"  # 8,359.9 floors to 8,359
    assert _fraction(0.9) == "0.9"


def test_names_are_kubernetes_names_and_a_spare_never_takes_its_pools():
    """At most 63 characters of [a-z0-9-]; a 57-character pool name plus `-spare` is 63."""
    long = dns_name("w" * 80, "us-east", limit=POOL_NAME_CHARS)
    assert len(long) == POOL_NAME_CHARS
    spare = dns_name(long, "spare")
    assert len(spare) == 57 + len("-spare") == 63 and spare != long
    assert dns_name("Chat_Ü", "EU West") == "chat-eu-west"


# --- the replica split and the scaling signal ------------------------------------------


def _phase(role: str, precision: str) -> str:
    return "unified" if role == "unified" else f"{role}-{precision}"


def _recomputed(physics, pool):
    """The verifier's pool of the same layout as the deployment record `pool`."""
    return next(
        p
        for p in physics
        if (p.region, p.entries[0].gpu, p.entries[0].tp, p.entries[0].pp, str(p.role))
        == (pool.region, pool.gpu, pool.tp, pool.pp, pool.role)
    )


def test_normal_and_spare_add_up_and_the_normal_size_is_the_smallest_that_carries(
    instance, plan, pools
):
    """n + spare = the plan's count; n x q(n) x u_max carries the pool's share of its
    phase's normal load (shares in proportion to capacity) and n - 1 replicas do not."""
    physics = recompute_pools(instance, plan, [], [])
    loads = normal_loads(plan)
    for pool in pools:
        assert pool.normal_replicas + pool.spare_replicas == pool.replicas
        mine = _recomputed(physics, pool)
        assert mine.count == pool.replicas
        phase = _phase(pool.role, pool.precision)
        total = sum(
            p.carries(p.count)
            for p in physics
            if p.region == pool.region and _phase(str(p.role), p.precision) == phase
        )
        load = loads[(pool.workload, pool.region, phase)] * mine.carries(mine.count) / total
        n = pool.normal_replicas
        if load <= 0:
            assert n == 0
            continue
        assert mine.carries(n) >= load * (1 - 1e-9)
        assert n == 1 or mine.carries(n - 1) < load


def test_a_region_loss_is_what_the_spare_is_for(plan, pools):
    """The default plan keeps spare only where another region's loss sends users: at
    least one pool holds spare replicas, and a pool whose (workload, region, phase)
    carries no load in the normal scenario (0 req/s in the plan's table) is all spare,
    one that carries some keeps at least one normal replica. (Which pool of a region
    carries the normal load is the solver's choice among plans of the same cost: the
    rule is checked on whichever it returned, never on a named pool.)"""
    assert sum(pool.spare_replicas for pool in pools) > 0
    loads = normal_loads(plan)
    for pool in pools:
        assert pool.normal_replicas + pool.spare_replicas == pool.replicas
        phase = "unified" if pool.role == "unified" else f"{pool.role}-{pool.precision}"
        if loads.get((pool.workload, pool.region, phase), 0.0) <= 0:
            assert pool.normal_replicas == 0 and pool.spare_replicas == pool.replicas


def test_a_fleet_without_scenarios_is_all_normal(instance, plan):
    """A hand-written fleet states no normal load: every replica is normal, none spare."""
    fleet = fleet_plan(list(plan.replicas))
    for pool in deploy_pools(instance, fleet):
        assert (pool.normal_replicas, pool.spare_replicas) == (pool.replicas, 0)


def test_thresholds_follow_the_headroom_rule(instance, plan, pools):
    """A static plan has no ramp (H = 0), so u* = 1 and the KV threshold is B / B_max of
    a replica at C = q(n), as `scaling_thresholds` computes; a usage share is in (0, 1]."""
    physics = recompute_pools(instance, plan, [], [])
    workload = instance.workload("chat")
    for pool in pools:
        scale = pool.autoscale
        assert scale.target_utilization == 1.0 and scale.headroom_rps == 0.0
        assert 0 < scale.kv_usage_scale_out <= 1
        assert math.isfinite(scale.queue_depth_scale_out) and scale.queue_depth_scale_out >= 0
        assert "gpu" not in " ".join(scale.signals).lower()
        recomputed = _recomputed(physics, pool)
        n = max(pool.normal_replicas, 1)
        c = recomputed.requests_per_s(n)
        lone = recomputed.capacity(n)
        expected = scaling_thresholds(
            c,
            0.0,
            n,
            c * lone.batch / lone.requests_per_s,
            lone.max_batch,
            lone.prefill_s,
            workload.prompt_tokens.cv,
            workload.slo.ttft_p99_ms / 1000,
        )
        assert scale.kv_usage_scale_out == pytest.approx(expected.kv_usage_scale_out)


# --- Kubernetes objects against the kubernetes client's models -------------------------

MODELS = {
    "Deployment": "V1Deployment",
    "HorizontalPodAutoscaler": "V2HorizontalPodAutoscaler",
}


def _round_trip(data: dict, model: str) -> dict:
    """`data` deserialized into the client's model class and serialized back: a field
    the model does not know is dropped, so a difference names it. The client is imported
    here, not with the module: half a second of each pytest-xdist worker's collection."""
    from kubernetes.client import ApiClient

    client = ApiClient()
    obj = client._ApiClient__deserialize(data, model)
    return client.sanitize_for_serialization(obj)


def _k8s_variants(pools):
    return kubernetes_objects(tuple(_variants(pools)))


def test_every_kubernetes_object_survives_the_client_models(pools):
    kinds = set()
    for obj in _k8s_variants(pools):
        kinds.add(obj["kind"])
        if obj["kind"] in MODELS:
            assert _round_trip(obj, MODELS[obj["kind"]]) == obj, obj["metadata"]["name"]
        else:
            assert obj["kind"] == "LeaderWorkerSet"
            assert unknown_keys("lws", obj) == []
            for side in ("leaderTemplate", "workerTemplate"):
                template = obj["spec"]["leaderWorkerTemplate"][side]
                assert _round_trip(template, "V1PodTemplateSpec") == template
    assert kinds == {"Deployment", "HorizontalPodAutoscaler", "LeaderWorkerSet"}


def test_a_dropped_field_is_caught(pools):
    """The round trip can fail: a misspelt field vanishes in the model class."""
    good = kubernetes_objects(pools[:1])[0]
    bad = {**good, "spec": {**good["spec"], "replica": 3}}
    assert _round_trip(good, "V1Deployment") == good
    assert _round_trip(bad, "V1Deployment") != bad


def test_gpus_nodes_and_replicas_of_the_objects(pools):
    """GPU requests per pod, node selectors by GPU type and region, replicas of the
    normal scenario and the spare, and an HPA on queue depth / KV usage, never GPU
    utilisation."""
    for pool in pools:
        objects = {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects((pool,))}
        normal = objects["Deployment", pool.name]
        assert normal["spec"]["replicas"] == pool.normal_replicas
        pod = normal["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {
            "fleetplan.io/gpu": pool.gpu,
            "topology.kubernetes.io/region": pool.region,
        }
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == str(
            pool.tp * pool.pp * pool.dp
        )
        spare = objects.get(("Deployment", f"{pool.name}-spare"))
        assert (spare["spec"]["replicas"] if spare else 0) == pool.spare_replicas
        hpa = objects.get(("HorizontalPodAutoscaler", pool.name))
        if pool.normal_replicas == 0:
            assert hpa is None
            continue
        assert hpa["spec"]["minReplicas"] == pool.normal_replicas
        assert hpa["spec"]["maxReplicas"] == pool.replicas
        names = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]]
        assert names and not any("gpu_util" in name or "utilization" in name for name in names)


def test_a_replica_over_two_nodes_is_a_leader_worker_set(pools):
    """TP 8 x PP 2 = 16 GPUs on 8-GPU nodes: a group of ceil(16 / 8) = 2 pods."""
    wide = dataclasses.replace(pools[0], tp=8, pp=2, gpus_per_replica=16, gpus_per_node=8)
    lws = kubernetes_objects((wide,))[0]
    assert lws["kind"] == "LeaderWorkerSet"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == "8"
    script = shlex.split(leader["args"][0])
    engine = script[script.index("exec") + 1 :]
    assert engine[:2] == ["vllm", "serve"] and unknown_flags("vllm", engine) == []
    assert _value(engine, "--distributed-executor-backend") == "ray"


# --- llm-d and Dynamo against their stored references ----------------------------------


def test_llm_d_values_use_only_the_charts_keys(pools):
    for document in llm_d_values(tuple(_variants(pools))).values():
        assert unknown_keys("llm-d", document) == []
        for role in ("decode", "prefill"):
            if role in document:
                args = document[role]["containers"][0]["args"]
                assert unknown_flags("vllm", args) == []


def test_dynamo_graph_uses_only_the_examples_keys(pools):
    """The graph's keys are the example's; a worker's pod (its main container standing in
    for the containers) is a valid PodSpec; its arguments are vLLM flags or the worker's
    own (`--model`, `--is-prefill-worker`)."""
    worker_flags = set(reference("dynamo")["worker_flags"])
    for graph in dynamo_graph(tuple(_variants(pools))):
        assert unknown_keys("dynamo", graph, frozenset({"spec.services"})) == []
        for service in graph["spec"]["services"].values():
            extra = service["extraPodSpec"]
            pod = {k: v for k, v in extra.items() if k != "mainContainer"}
            pod["containers"] = [{"name": "main", **extra["mainContainer"]}]
            assert _round_trip(pod, "V1PodSpec") == pod
            args = extra["mainContainer"].get("args", [])
            problems = unknown_flags("vllm", args)
            assert all(problem.split()[0] in worker_flags for problem in problems), problems


def test_deploy_writes_files_for_every_target(instance, plan):
    for target in TARGETS:
        files = deploy_files(instance, plan, target)
        assert files, target


# --- the fleet read back ------------------------------------------------------------------


def test_kubernetes_objects_round_trip_to_a_fleet_verify_accepts(instance, plan, pools):
    text = "".join(deploy_files(instance, plan, "k8s").values())
    imported = pools_from_kubernetes(text)
    fleet = fleet_plan(imported)
    assert {(p.key, p.region, p.count) for p in fleet.replicas} == {
        (p.key, p.region, p.count) for p in plan.replicas if p.count
    }
    owned = owned_gpus(imported)
    for use in plan.gpus:
        assert owned.get(use.region, {}).get(use.gpu, 0) == use.used
    document = yaml.safe_load(DEFAULT_INSTANCE.read_text())
    from models.schema.instance import Instance

    running = Instance.model_validate(with_existing(document, owned))
    result = verify(running, fleet)
    assert result.ok, result
    assert verify(instance, fleet).ok


def test_a_csv_fleet_is_read_with_its_gpus_counted():
    """3 replicas of TP 2 x PP 2 = 12 GPUs, and 2 of TP 1 = 2 more of another type."""
    text = (
        "workload,region,gpu,precision,tp,pp,replicas,role\n"
        "chat,us-east,h100-sxm,fp8,2,2,3,unified\n"
        "chat,us-east,h200,fp8,1,1,2,decode\n"
    )
    pools = pools_from_csv(text)
    assert owned_gpus(pools) == {"us-east": {"h100-sxm": 3 * 2 * 2, "h200": 2 * 1}}
    assert [p.gpus for p in fleet_plan(pools).replicas] == [12, 2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "workload,region,gpu\nchat,us-east,h100-sxm\n",
            "CSV header: missing precision, tp, pp, replicas; the columns are",
        ),
        (
            "workload,region,gpu,precision,tp,pp,replicas,foo\nchat,r,h100-sxm,fp8,1,1,1,2\n",
            "CSV header: unknown foo; the columns are",
        ),
        ("workload,region,gpu,precision,tp,pp,replicas\nchat,r,h100-sxm,fp8,two,1,1\n", "row 2"),
        (  # Python's int() reads 1_6 as 16 and Arabic-Indic digits: no CSV writer means them
            "workload,region,gpu,precision,tp,pp,replicas\nchat,r,h100-sxm,fp8,1,1,1_6\n",
            "row 2: replicas '1_6' is not a whole number",
        ),
        (
            "workload,region,gpu,precision,tp,pp,replicas\nchat,r,h100-sxm,fp8,\u0662,1,1\n",
            "row 2: tp '\u0662' is not a whole number",
        ),
        (  # one line naming the field, not pydantic's report twice with its URL
            "workload,region,gpu,precision,tp,pp,replicas\nchat,r,h100-sxm,fp9,1,1,1\n",
            "row 2: precision: Input should be 'bf16', 'fp8' or 'fp4' (got 'fp9')",
        ),
    ],
)
def test_a_bad_csv_names_the_row_or_the_header(text, message):
    with pytest.raises(FleetImportError) as raised:
        pools_from_csv(text)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value) and "nothing" not in str(raised.value)


def test_existing_is_raised_to_what_runs_never_lowered():
    """16 owned and 8 running stays 16; 4 owned and 8 running becomes 8."""
    document = {
        "regions": [
            {"name": "a", "existing": {"h100-sxm": 16}},
            {"name": "b", "existing": {"h100-sxm": 4, "h200": 2}},
        ]
    }
    held = {"a": {"h100-sxm": 8}, "b": {"h100-sxm": 8}}
    regions = with_existing(document, held)["regions"]
    assert [r["existing"] for r in regions] == [{"h100-sxm": 16}, {"h100-sxm": 8, "h200": 2}]


def test_a_fleet_in_an_unknown_region_is_refused():
    with pytest.raises(FleetImportError, match="mars"):
        with_existing({"regions": [{"name": "us-east"}]}, {"mars": {"h100-sxm": 8}})


def test_a_plan_that_does_not_fit_the_instance_is_refused(instance):
    """A pool in a region the instance lacks, or a shared group, names what is wrong."""
    stray = ReplicaPool(
        workload="chat", region="mars", gpu="h100-sxm", precision="fp8", tp=2, pp=1, count=1
    )
    with pytest.raises(DeployError, match="mars"):
        deploy_pools(instance, Plan(replicas=(stray,)))
    group = stray.model_copy(
        update={
            "region": "us-east",
            "members": (GroupMember(workload="chat", requests_per_s_per_replica=1.0),),
        }
    )
    with pytest.raises(DeployError, match="shared groups"):
        deploy_pools(instance, Plan(replicas=(group,)))


def test_a_csv_pool_on_two_rows_is_refused_naming_both():
    """A row copied twice read as one pool of 3 + 3 = 6 replicas (12 GPUs held where the
    fleet runs 6): the CSV is one row per pool, so the second row is named, with the
    first. The same layout at another KV precision or in another region is another
    pool, read as before: 3 x 2 GPUs + 3 x 2 GPUs."""
    header = "workload,region,gpu,precision,tp,pp,replicas,kv_precision\n"
    row = "chat,us-east,h100-sxm,fp8,2,1,3,\n"
    with pytest.raises(FleetImportError) as raised:
        pools_from_csv(header + row + "chat,us-west,h100-sxm,fp8,2,1,1,\n" + row)
    assert str(raised.value) == (
        "row 4: the pool of chat in us-east on h100-sxm.fp8.tp2pp1.unified is row 2 "
        "already; give each pool once, with all its replicas"
    )
    other = pools_from_csv(header + row + "chat,us-east,h100-sxm,fp8,2,1,3,bf16\n")
    assert owned_gpus(other) == {"us-east": {"h100-sxm": 3 * 2 + 3 * 2}}
