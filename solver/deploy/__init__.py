"""From a plan to a running fleet, and back: `fleetplan deploy` and `fleetplan fleet-import`.

`pools.deploy_pools` turns a plan's pools into deployment records: each pool's engine
settings (precision, KV precision, TP/PP/EP/DP, batch cap, tokens per iteration, chunked
prefill, prefix caching and KV tiers, speculation, the disaggregated pair), its replicas
split into the normal scenario's and the failover spare, and its autoscaling signal and
thresholds (`models.operations.autoscaling`, the headroom report's rule). `engines`
renders them as vLLM, SGLang and TensorRT-LLM launch arguments; `manifests` as Kubernetes
objects (Deployment or LeaderWorkerSet, spare, HPA / KEDA), llm-d ModelService values and
a Dynamo DynamoGraphDeployment. `references` holds the flag lists and schemas each target
is checked against (references/*.yaml, each with the repository, path and commit it was
read from). `fleet_import` reads a running fleet (a CSV of pools, or the objects
`manifests` writes) back into plan replicas and an instance's `existing` GPUs.

Imports: models.schema (the instance), models.serving (roles), models.operations (the
autoscaling thresholds), models.io (the one check of a JSON key given twice, for the
fleet read back), models.physics.overlap (which engine runs two-batch overlap at which
layout), models.physics.catalog (the name a misspelt GPU most likely meant), solver.plan
(the plan and its replica records) and solver.verify (its pools: the physics of a
configuration at any pool size); never cli.
"""
