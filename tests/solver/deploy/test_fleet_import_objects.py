"""fleet-import of Kubernetes objects that run otherwise than their pool annotation says,
or that are given twice: each was read as the annotation's plan (a pod of twice the GPUs,
another region's nodes, one Deployment counted twice); each is now refused naming it."""

import dataclasses
import json

import pytest
import yaml

from solver.deploy.files import deploy_files
from solver.deploy.fleet_import import FleetImportError, pools_from_objects
from solver.deploy.manifests import kubernetes_objects


def _first_deployment(instance, plan):
    documents = [
        d for text in deploy_files(instance, plan, "k8s").values() for d in yaml.safe_load_all(text)
    ]
    first = next(d for d in documents if d and d["kind"] == "Deployment")
    return documents, first


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # the pods of the pool's first Deployment scaled to twice the GPUs the annotation
        # lays out (tp x pp x dp): existing was raised by the annotation's count, and
        # verify judged the layout, not what runs
        (lambda pod, layout: pod["containers"][0]["resources"]["limits"].update(
            {"nvidia.com/gpu": str(2 * layout["tp"] * layout["pp"] * layout["dp"])}),
         "its pods hold {twice} GPUs a replica (nvidia.com/gpu), its fleetplan.io/pool "
         "annotation lays out {once}"),
        (lambda pod, layout: pod["nodeSelector"].update(
            {"topology.kubernetes.io/region": "eu-west"}),
         "its pods select topology.kubernetes.io/region eu-west, its fleetplan.io/pool "
         "annotation says {region}"),
        (lambda pod, layout: pod["nodeSelector"].update({"fleetplan.io/gpu": "b200"}),
         "its pods select fleetplan.io/gpu b200, its fleetplan.io/pool annotation says {gpu}"),
    ],
    ids=["gpus-per-pod", "region-selector", "gpu-selector"],
)  # fmt: skip
def test_an_object_its_annotation_contradicts_is_refused(instance, plan, edit, message):
    """fleet-import read the annotation alone: an object edited to run otherwise (twice
    the GPUs a pod, another region's or GPU type's nodes) was read as the plan wrote it."""
    documents, first = _first_deployment(instance, plan)
    layout = json.loads(first["metadata"]["annotations"]["fleetplan.io/pool"])
    edit(first["spec"]["template"]["spec"], layout)
    once = layout["tp"] * layout["pp"] * layout["dp"]
    with pytest.raises(FleetImportError) as raised:
        pools_from_objects(documents)
    expected = message.format(twice=2 * once, once=once, region=layout["region"],
                              gpu=layout["gpu"])  # fmt: skip
    assert expected in str(raised.value)
    assert first["metadata"]["name"] in str(raised.value)


def test_a_replica_over_two_nodes_reads_back_as_its_layout(pools):
    """A TP 8 x PP 2 replica of 16 GPUs on 8-GPU nodes: a LeaderWorkerSet of size 2 whose
    leader and worker each hold 8, read back as the annotation's 16 (no refusal)."""
    wide = dataclasses.replace(pools[0], tp=8, pp=2, gpus_per_replica=16)
    (imported,) = pools_from_objects(kubernetes_objects((wide,))[:1])
    assert (imported.tp, imported.pp, imported.replica_gpus) == (8, 2, 16)


def test_an_object_given_twice_is_refused_not_counted_twice(instance, plan):
    """The first Deployment twice (a manifest saved twice into the folder read back):
    Kubernetes runs one object of a kind and name in a namespace, and its replicas were
    counted twice, existing raised by twice its GPUs."""
    documents, first = _first_deployment(instance, plan)
    with pytest.raises(FleetImportError) as raised:
        pools_from_objects([*documents, first])
    name = first["metadata"]["name"]
    assert f"(Deployment {name}): given before as document " in str(raised.value)
    other = json.loads(json.dumps(first))
    other["metadata"]["namespace"] = "canary"  # another namespace: another object
    assert len(pools_from_objects([*documents, other])) == len(pools_from_objects(documents)) + 1


def test_an_annotation_nested_past_the_json_reader_is_refused_naming_the_object(instance, plan):
    """A pool annotation of 50,000 nested lists: json.loads' RecursionError reached the
    user as 'the input is too large or too deeply nested to process', naming neither the
    file's object nor the annotation."""
    documents, first = _first_deployment(instance, plan)
    first["metadata"]["annotations"]["fleetplan.io/pool"] = "[" * 50_000 + "]" * 50_000
    with pytest.raises(FleetImportError) as raised:
        pools_from_objects(documents)
    message = "fleetplan.io/pool nests lists or objects deeper than JSON can be read"
    assert message in str(raised.value) and first["metadata"]["name"] in str(raised.value)
