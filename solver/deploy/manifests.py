"""Kubernetes objects, llm-d values and a Dynamo graph for a plan's pools.

Kubernetes (`kubernetes_objects`), per pool:
- the normal scenario's replicas: a Deployment (apps/v1) of `normal_replicas` pods, or a
  LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) when one replica spans several nodes
  (size = nodes per replica; the leader starts a Ray head and vLLM over it, the workers
  join the head); each pod requests its GPUs (`nvidia.com/gpu`) and selects
  nodes by GPU type (`fleetplan.io/gpu`) and region (`topology.kubernetes.io/region`);
- the failover spare: the same object named `<pool>-spare` with `spare_replicas`, labelled
  `fleetplan.io/spare: "true"` (started by the failover runbook, not by the autoscaler);
  an hourly plan's spare started after a loss (`started_replicas`) is that object too, its
  replicas kept warm (often 0) and the annotation `fleetplan.io/failover-start-replicas`
  saying how many the runbook starts after the loss;
- an autoscaler: a HorizontalPodAutoscaler (autoscaling/v2) on the normal object, between
  the normal size and the whole pool, with Pods metrics on the pool's signals (prefill
  queue depth, KV-cache usage) at the thresholds `solver.deploy.pools` derived; never GPU
  utilisation. A pool with no normal load has no autoscaler (all of it is spare). The
  HPA and the failover runbook draw on the same GPUs: the plan holds normal + spare
  replicas in all, so a runbook starts the spare only up to the pool's count less what
  the HPA already runs.
Every object carries the annotation `fleetplan.io/pool` (the pool's layout as JSON), which
`solver.deploy.fleet_import` reads back.

llm-d (`llm_d_values`): one ModelService Helm values document per (workload, region,
prefill/decode pair or unified pool): `modelArtifacts`, `decode` and `prefill` with
`replicas`, `nodeSelector` and the vLLM container (`modelCommand: vllmServe`, its
arguments and GPUs); `multinode: true` when a replica spans nodes.

Dynamo (`dynamo_graph`): one DynamoGraphDeployment (nvidia.com/v1alpha1) per (workload,
region): a Frontend and one worker service per pool with its replicas, GPU resources and
the vLLM worker's arguments (`--is-prefill-worker` on a prefill pool).
"""

import json
import re
import shlex

from solver.deploy.engines import vllm_command
from solver.deploy.pools import DeployError, DeployPool, dns_name

POOL_ANNOTATION = "fleetplan.io/pool"
"""The annotation holding a pool's layout as JSON (what fleet-import reads)."""
FAILOVER_START_ANNOTATION = "fleetplan.io/failover-start-replicas"
"""On a spare object: replicas the failover runbook starts after a region loss (an hourly
plan's spare started after the loss rather than kept warm)."""
GPU_LABEL = "fleetplan.io/gpu"
"""The node label naming the GPU type (catalog name) nodes must carry."""
REGION_LABEL = "topology.kubernetes.io/region"
"""The well-known node label of the region."""
IMAGES = {
    "vllm": "vllm/vllm-openai:latest",
    "dynamo": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1",
}
"""Container images: vLLM's OpenAI server; Dynamo's vLLM runtime (its example's tag)."""
RAY_PORT = 6379
"""The Ray head's port on a LeaderWorkerSet's leader; the workers join it at
`$LWS_LEADER_ADDRESS` (an environment variable LeaderWorkerSet sets in every pod)."""
METRICS = {"queue_depth": "vllm:num_requests_waiting", "kv_cache_usage": "vllm:kv_cache_usage_perc"}
"""The vLLM Prometheus metric of each signal, as exposed to the HPA through an adapter."""


_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
"""A Kubernetes label value that is not empty: at most 63 characters, letters, digits,
'-', '_' and '.', beginning and ending with a letter or digit (the API server refuses a
nodeSelector holding any other, and `kubectl apply` with it)."""


def check_node_labels(pools: tuple[DeployPool, ...]) -> None:
    """Refuse a region or GPU name that no node label can hold, before any manifest
    selects nodes by it (`REGION_LABEL`, `GPU_LABEL`).

    Raises:
        DeployError: naming each such name, its label and the rule.
    """
    bad = {
        (kind, label, name): None
        for pool in pools
        for kind, label, name in (
            ("region", REGION_LABEL, pool.region),
            ("GPU", GPU_LABEL, pool.gpu),
        )
        if not _LABEL_VALUE.fullmatch(name)
    }
    if bad:
        raise DeployError(
            "; ".join(
                f"{kind} {name!r} cannot be the node label {label}" for kind, label, name in bad
            )
            + ": a label value is at most 63 letters, digits, '-', '_' or '.', beginning and "
            "ending with a letter or digit (the API server refuses any other); rename it in "
            "the instance, or deploy with --target vllm, sglang or trtllm"
        )


def pool_layout(pool: DeployPool) -> dict:
    """The fields of `solver.plan.records.ReplicaPool` that name the pool's layout
    (`redundant_experts` where the pool holds copies, so fleet-import reads them back)."""
    copies = {"redundant_experts": pool.redundant_experts} if pool.redundant_experts else {}
    return {
        "workload": pool.workload,
        "region": pool.region,
        "gpu": pool.gpu,
        "precision": pool.precision,
        "kv_precision": pool.kv_precision,
        "tp": pool.tp,
        "pp": pool.pp,
        "ep": pool.ep,
        "dp": pool.dp,
        "role": pool.role,
        "speculative": pool.speculative_option,
        **copies,
    }


def _labels(pool: DeployPool, spare: bool) -> dict:
    return {
        "app.kubernetes.io/name": pool.name,
        "app.kubernetes.io/managed-by": "fleetplan",
        "fleetplan.io/role": pool.role,
        "fleetplan.io/spare": "true" if spare else "false",
    }


def _pod_template(pool: DeployPool, spare: bool, gpus: int, command: list[str]) -> dict:
    return {
        "metadata": {"labels": _labels(pool, spare)},
        "spec": {
            "nodeSelector": {GPU_LABEL: pool.gpu, REGION_LABEL: pool.region},
            "containers": [
                {
                    "name": "engine",
                    "image": IMAGES["vllm"],
                    "command": command[:2],
                    "args": command[2:],
                    "ports": [{"containerPort": 8000, "name": "http"}],
                    "resources": {
                        "requests": {"nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
    }


def _metadata(pool: DeployPool, name: str, spare: bool) -> dict:
    annotations = {POOL_ANNOTATION: json.dumps(pool_layout(pool), sort_keys=True)}
    if spare and pool.started_replicas:
        annotations[FAILOVER_START_ANNOTATION] = str(pool.started_replicas)
    return {"name": name, "labels": _labels(pool, spare), "annotations": annotations}


def workload_object(pool: DeployPool, spare: bool) -> dict:
    """The Deployment (or LeaderWorkerSet) of the pool's normal replicas or its spare."""
    name = dns_name(pool.name, "spare") if spare else pool.name
    replicas = pool.spare_replicas if spare else pool.normal_replicas
    command = vllm_command(pool)
    metadata = _metadata(pool, name, spare)
    if not pool.multi_node:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": _labels(pool, spare)},
                "template": _pod_template(pool, spare, pool.gpus_per_replica, command),
            },
        }
    per_node = pool.gpus_per_node
    leader = ["sh", "-c", f"ray start --head --port={RAY_PORT} && exec {shlex.join(command)}"]
    worker = ["sh", "-c", f"ray start --block --address=$LWS_LEADER_ADDRESS:{RAY_PORT}"]
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": pool.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _pod_template(pool, spare, per_node, leader),
                "workerTemplate": _pod_template(pool, spare, per_node, worker),
            },
        },
    }


def autoscaler(pool: DeployPool, target: dict) -> dict | None:
    """The HPA of the pool's normal object (None when it has no normal replica)."""
    if pool.normal_replicas < 1:
        return None
    scale = pool.autoscale
    values = {
        "queue_depth": scale.queue_depth_scale_out,
        "kv_cache_usage": scale.kv_usage_scale_out,
    }
    metrics = [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": METRICS[signal]},
                "target": {"type": "AverageValue", "averageValue": f"{values[signal]:.4f}"},
            },
        }
        for signal in scale.signals
    ]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(pool, pool.name, False),
        "spec": {
            "scaleTargetRef": {
                "apiVersion": target["apiVersion"],
                "kind": target["kind"],
                "name": target["metadata"]["name"],
            },
            "minReplicas": pool.normal_replicas,
            "maxReplicas": pool.replicas,
            "metrics": metrics,
        },
    }


def kubernetes_objects(pools: tuple[DeployPool, ...]) -> list[dict]:
    """Every pool's normal object, its spare (when it has one) and its autoscaler."""
    objects = []
    for pool in pools:
        normal = workload_object(pool, spare=False)
        objects.append(normal)
        if pool.spare_replicas > 0 or pool.started_replicas > 0:
            objects.append(workload_object(pool, spare=True))
        hpa = autoscaler(pool, normal)
        if hpa is not None:
            objects.append(hpa)
    return objects


def _groups(pools: tuple[DeployPool, ...]) -> dict[tuple[str, str], list[DeployPool]]:
    groups: dict[tuple[str, str], list[DeployPool]] = {}
    for pool in pools:
        groups.setdefault((pool.workload, pool.region), []).append(pool)
    return groups


def _llm_d_role(pool: DeployPool) -> dict:
    command = vllm_command(pool)
    gpus = str(pool.gpus_per_node if pool.multi_node else pool.gpus_per_replica)
    return {
        "replicas": pool.replicas,
        "nodeSelector": {GPU_LABEL: pool.gpu, REGION_LABEL: pool.region},
        "containers": [
            {
                "name": "vllm",
                "image": IMAGES["vllm"],
                "modelCommand": "vllmServe",
                "args": command[3:],
                "resources": {
                    "limits": {"nvidia.com/gpu": gpus},
                    "requests": {"nvidia.com/gpu": gpus},
                },
            }
        ],
    }


def _llm_d_document(pool: DeployPool) -> dict:
    document: dict = {"modelArtifacts": {"uri": f"hf://{pool.model}", "name": pool.model}}
    if pool.multi_node:
        document["multinode"] = True
    return document


def llm_d_values(pools: tuple[DeployPool, ...]) -> dict[str, dict]:
    """llm-d ModelService values per document name: a unified pool is a `decode` role
    alone; a prefill/decode pair fills both roles."""
    documents = {}
    paired = set()
    for pool in pools:
        if pool.role == "prefill":
            continue  # written with its decode half
        values = {**_llm_d_document(pool), "decode": _llm_d_role(pool)}
        prefill = next((p for p in pools if p.role == "prefill" and p.pair == pool.name), None)
        if prefill is not None:
            values["prefill"] = _llm_d_role(prefill)
            paired.add(prefill.name)
        documents[pool.name] = values
    for pool in pools:
        if pool.role == "prefill" and pool.name not in paired:
            documents[pool.name] = {**_llm_d_document(pool), "prefill": _llm_d_role(pool)}
    return documents


def _graph_names(groups: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each (workload, region)'s graph name, distinct: `dns_name(workload, region)`,
    `graph` where that is empty (names of no ASCII letter or digit), and `-2`, `-3`, ...
    on a name an earlier group took (Chat and chat; a-b in c and a in b-c). The name is
    the graph's file, so two groups of one name would write one file."""
    names: dict[tuple[str, str], str] = {}
    for group in groups:
        base = dns_name(*group) or "graph"
        name, index = base, 1
        while name in names.values():
            index += 1
            name = dns_name(base[: 63 - len(str(index)) - 1], str(index))
        names[group] = name
    return names


def dynamo_graph(pools: tuple[DeployPool, ...]) -> list[dict]:
    """One DynamoGraphDeployment per (workload, region), each of its own name."""
    graphs = []
    groups = _groups(pools)
    names = _graph_names(list(groups))
    for (workload, region), members in groups.items():
        name = names[(workload, region)]
        services: dict = {
            "Frontend": {
                "dynamoNamespace": name,
                "componentType": "frontend",
                "replicas": 1,
                "extraPodSpec": {"mainContainer": {"image": IMAGES["dynamo"]}},
            }
        }
        for pool in members:
            args = ["--model", pool.model, *vllm_command(pool)[5:]]
            if pool.role == "prefill":
                args.append("--is-prefill-worker")
            service = {
                "dynamoNamespace": name,
                "componentType": "worker",
                "replicas": pool.replicas,
                "resources": {"limits": {"gpu": str(pool.gpus_per_replica)}},
                "extraPodSpec": {
                    "nodeSelector": {GPU_LABEL: pool.gpu, REGION_LABEL: pool.region},
                    "mainContainer": {
                        "image": IMAGES["dynamo"],
                        "command": ["python3", "-m", "dynamo.vllm"],
                        "args": args,
                    },
                },
            }
            if pool.role != "unified":
                service["subComponentType"] = pool.role
            services[pool.name] = service
        graphs.append(
            {
                "apiVersion": "nvidia.com/v1alpha1",
                "kind": "DynamoGraphDeployment",
                "metadata": {"name": name},
                "spec": {"services": services},
            }
        )
    return graphs
