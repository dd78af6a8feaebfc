"""The inputs of the hostile-input fuzz (tests/bench/fuzz_run.py): each file kind a
command reads (instances, a plan, fleets as CSV and as deploy's Kubernetes objects,
measurements for calibrate, an engine profile, a sweep grid, an estimate config, a
Hugging Face config.json), the commands that read it, its mutants, and the input and
output paths that are no plain file (a folder, /dev/zero, /dev/full, a path under a file,
the input itself, a file of another kind).
"""

import json
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.bench import fuzz_mutate as mutate
from tests.bench.fuzz_judge import run
from tests.engine_results import GENAI_PERF, VLLM_BENCH_SERVE
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION, REPO


@dataclass
class Target:
    """One input file kind: its base text, its suffix, and the commands that read it
    (each an argv given the mutated file's path and a scratch folder)."""

    name: str
    text: bytes
    suffix: str
    commands: list[Callable[[Path, Path], list]]
    csv: bool = False
    expensive: bool = False
    """Commands that solve: sampled more thinly."""
    read: Callable[["mutate.Mutant"], bool] = lambda mutant: True
    """Whether the commands read the place a mutant changed (one elsewhere, in a part of
    the file kept as a record or of another program's, may be accepted)."""


def _solve_json(instance: Path, folder: Path) -> bytes:
    plan = folder / "base-plan.json"
    outcome = run(["solve", instance, "--json", plan])
    assert outcome.code == 0, outcome.stderr
    return plan.read_bytes()


def _runs_csv() -> bytes:
    from tests.cli.test_calibrate_cli import _write_runs

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "runs.csv"
        _write_runs(path)
        return path.read_bytes()


ONE = ONE_MODEL_ONE_REGION
PERF = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "200"]


def targets(folder: Path, solve_instances: bool, rich_plans: tuple[str, ...] = ()) -> list[Target]:
    """Every input kind, built once in `folder` (a plan solved, a fleet deployed, a
    profile calibrated), with the plans of the shipped instances `rich_plans` (an hourly
    plan, a disaggregated pair, a voice workload, KV tiers: what the one-region plan
    lacks)."""
    plan = _solve_json(ONE, folder)
    (folder / "plan.json").write_bytes(plan)
    deploy_out = folder / "k8s"
    outcome = run(
        ["deploy", folder / "plan.json", "--instance", ONE, "--target", "k8s", "-o", deploy_out]
    )
    assert outcome.code == 0, outcome.stderr
    manifests = sorted(p for p in deploy_out.rglob("*.yaml"))
    runs = _runs_csv()
    (folder / "runs.csv").write_bytes(runs)
    profile = folder / "profile.yaml"
    outcome = run(["calibrate", folder / "runs.csv", "-o", profile, "--no-leave-one-out"])
    assert outcome.code == 0, outcome.stderr
    fleet_csv = b"workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h100-sxm,fp8,1,1,2\n"
    grid = (
        f"instance: {ONE}\nset: {{policy.buy_unit: gpu}}\naxes:\n"
        "  workloads[chat].demand.us-east.peak_requests_per_s: [10, 20]\n"
        "  regions[us-east].supply.h100-sxm.price_per_gpu_hour: [2.0, 3.0]\n"
    ).encode()
    estimate = (
        b"requests_per_day: 1000000\npeak_to_average: 2\nzones: 3\nslo: 0.999\nlatency_s: 6\n"
    )
    hf = (REPO / "tests" / "fixtures" / "hf_configs" / "llama-3.1-8b.json").read_bytes()
    instance_cmds = [lambda f, d: ["validate", f]]
    solve_cmds = [
        lambda f, d: ["solve", f, "--time-limit", "3", "--json", d / "out.json"],
        lambda f, d: ["explain", f, "--time-limit", "3"],
        lambda f, d: ["report", f, "-o", d / "r.html"],
        lambda f, d: ["verify", f, folder / "plan.json"],
    ]
    found = [
        Target(p.stem, p.read_bytes(), ".yaml", instance_cmds)
        for p in sorted(INSTANCES.glob("*.yaml"))
    ]
    found += [
        Target(
            "one-model-one-region",
            ONE.read_bytes(),
            ".yaml",
            instance_cmds + solve_cmds,
            expensive=True,
        )
    ]
    if solve_instances:
        found += [
            Target(f"solve:{p.stem}", p.read_bytes(), ".yaml", solve_cmds[:2], expensive=True)
            for p in sorted(INSTANCES.glob("*.yaml"))
        ]
    found += [
        _plan_target("plan", plan, ONE),
        Target(
            "fleet-csv",
            fleet_csv,
            ".csv",
            [lambda f, d: [*_fleet_import(f, d), "--plan-out", d / "p.json"]],
            csv=True,
        ),
        Target(
            "measurements",
            runs,
            ".csv",
            [
                lambda f, d: ["calibrate", f, "-o", d / "prof.yaml", "--no-leave-one-out"],
            ],
            csv=True,
        ),
        Target(
            "profile",
            profile.read_bytes(),
            ".yaml",
            [
                lambda f, d: ["perf", *PERF, "--engine", f],
            ],
            read=_profile_read,
        ),  # the fit's record, unread
        Target(
            "grid",
            grid,
            ".yaml",
            [
                lambda f, d: ["sweep", f, "--out", d / "s.jsonl"],
            ],
            expensive=True,
        ),
        Target("estimate-config", estimate, ".yaml", [lambda f, d: ["estimate", "--config", f]]),
        Target(
            "hf-config",
            hf,
            ".json",
            [
                lambda f, d: [
                    "perf",
                    "--model-config",
                    f,
                    "--gpu",
                    "h100-sxm",
                    "-i",
                    "1000",
                    "-o",
                    "200",
                ],
            ],
            read=lambda m: not m.where or m.where[0] in HF_READ,
        ),
    ]
    for name, result in BENCH_RESULTS.items():
        found.append(
            Target(
                f"measurements:{name}",
                json.dumps(result).encode(),
                ".json",
                [
                    lambda f, d: [
                        "calibrate",
                        folder / "runs.csv",
                        f,
                        *("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16"),
                        *("--tp", "1", "-o", d / "p.yaml", "--no-leave-one-out"),
                    ]
                ],
                # the tools write many more fields than calibrate reads
                read=lambda m: not m.kind.startswith(("unknown-key", "moved-key")),
            )
        )
    for name in rich_plans:
        instance = INSTANCES / f"{name}.yaml"
        found.append(_plan_target(f"plan:{name}", _solve_json(instance, folder), instance))
    for manifest in manifests[:2]:
        found.append(
            Target(
                f"k8s:{manifest.name}",
                manifest.read_bytes(),
                ".yaml",
                [_fleet_import],
                read=_k8s_read,
            )
        )
    return found


HF_READ = {
    "model_type",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "num_hidden_layers",
    "intermediate_size",
    "vocab_size",
    "head_dim",
    "max_position_embeddings",
    "quantization_config",
}
"""The config.json keys the Llama reader reads (the rest are Hugging Face's own)."""


BENCH_RESULTS = {
    "vllm": VLLM_BENCH_SERVE,
    "genai-perf": GENAI_PERF,
    "trtllm-bench": {
        "world_info": {"tp_size": 1, "pp_size": 1},
        "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 64},
        "performance": {"system_output_throughput_tok_s": 9000.0},
    },
}
"""One run of each JSON format calibrate reads (tests/models/profiles/test_measurements.py),
read beside the CSV's three runs."""


def _fleet_import(file: Path, folder: Path) -> list:
    """fleet-import of `file` against the one-region instance, its instance written in
    `folder` (a fleet CSV's target adds `--plan-out`)."""
    return ["fleet-import", file, "--instance", ONE, "--instance-out", folder / "i.yaml"]


def _plan_target(name: str, plan: bytes, instance: Path) -> Target:
    """A plan of `instance`, read by verify, simulate, deploy and report."""
    return Target(
        name,
        plan,
        ".json",
        [
            lambda f, d: ["verify", instance, f],
            lambda f, d: ["simulate", instance, f, "--duration-s", "20"],
            lambda f, d: ["deploy", f, "--instance", instance, "--target", "vllm", "-o", d / "v"],
            lambda f, d: ["deploy", f, "--instance", instance, "--target", "k8s", "-o", d / "k"],
            lambda f, d: ["report", instance, "--plan", f, "-o", d / "r.html"],
        ],
    )


def _profile_read(mutant: "mutate.Mutant") -> bool:
    """The places of a profile perf reads: all but the fit's record, of which reports
    quote three figures."""
    where = mutant.where
    return where[:1] != ("fit",) or len(where) == 1 or where[1] in FIT_SHOWN


FIT_SHOWN = ("rows", "median_abs_error_pct", "leave_one_out_median_abs_error_pct")


def _k8s_read(mutant: "mutate.Mutant") -> bool:
    """The places of deploy's objects fleet-import reads: a Deployment's pool annotation,
    replicas, node selector and GPU limits (an HPA, labels, requests beside limits and the
    engine's arguments are for Kubernetes; text added at the end lands in the HPA)."""
    where = mutant.where
    if not where:
        return mutant.kind not in ("text:merge-key", "text:long-line", "text:complex-key")
    read = ("fleetplan.io/pool", "replicas", "nodeSelector")
    gpus = "limits" in where and "nvidia.com/gpu" in where
    return where[0] == 0 and (gpus or any(key in where for key in read))


def _parse(target: Target):
    text = target.text.decode("utf-8")
    if target.suffix == ".json":
        return json.loads(text)
    documents = list(yaml.safe_load_all(text))
    return documents[0] if len(documents) == 1 else documents


def dumped(target: Target, document) -> bytes:
    if target.suffix == ".json":
        return json.dumps(document, allow_nan=True).encode()
    if target.name.startswith("k8s:"):  # a stream of documents
        return yaml.safe_dump_all(document, sort_keys=False, allow_unicode=True).encode()
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode()


def mutants(target: Target, rng: random.Random) -> list["mutate.Mutant"]:
    """Every mutation of `target` (text, and structural where it parses)."""
    if target.csv:
        return list(mutate.csv_mutants(target.text, rng)) + list(
            mutate.text_mutants(target.text, rng)
        )
    document = _parse(target)
    found = [
        m
        for path, value in mutate.key_paths(document)
        for m in mutate.value_mutants(document, path, value)
    ]
    found += mutate.moved_key_mutants(document, rng, 20)
    found += mutate.duplicate_name_mutants(document)
    found += mutate.text_mutants(target.text, rng)
    return found


def path_cases(folder: Path) -> Iterator[tuple[str, list, list[Path]]]:
    """Input and output paths that are not plain files: (label, argv, files to keep)."""
    plan = folder / "plan.json"
    kept = folder / "kept.txt"
    kept.write_text("the user's own notes\n")
    loop, dangling, fifo, to_plan = (folder / n for n in ("loop", "dangling", "fifo", "to-plan"))
    loop.symlink_to(loop)
    dangling.symlink_to(folder / "nowhere" / "x.json")
    os.mkfifo(fifo)
    to_plan.symlink_to(plan)
    instance, to_instance = folder / "inst.yaml", folder / "to-inst.yaml"
    instance.write_bytes(ONE.read_bytes())
    to_instance.symlink_to(instance)
    for bad, label in (
        (folder, "dir"),
        (Path("/dev/zero"), "dev-zero"),
        (folder / "absent.yaml", "absent"),
        (loop, "symlink-loop"),
        (dangling, "dangling-symlink"),
        (fifo, "fifo"),
        (Path("/proc/self/status"), "proc-file"),
    ):
        yield f"input-{label}", ["validate", bad], []
        yield f"plan-{label}", ["verify", ONE, bad], []
        yield (
            f"plan-{label}",
            ["deploy", bad, "--instance", ONE, "--target", "vllm", "-o", folder / "d1"],
            [],
        )
        yield f"csv-{label}", ["calibrate", bad, "-o", folder / "p.yaml"], []
        yield (
            f"fleet-{label}",
            ["fleet-import", bad, "--instance", ONE, "--instance-out", folder / "o.yaml"],
            [],
        )
        yield f"config-{label}", ["estimate", "--config", bad], []
        yield f"profile-{label}", ["perf", *PERF, "--engine", bad], []
        yield (
            f"hf-{label}",
            ["perf", "--model-config", bad, "--gpu", "h100-sxm", "-i", "10", "-o", "10"],
            [],
        )
        yield f"grid-{label}", ["sweep", bad, "--out", folder / "s.jsonl"], []
    for out, label in (
        (plan, "same-as-input"),
        (folder, "dir"),
        (kept / "x.json", "under-a-file"),
        (kept, "existing-other"),
        (Path("/dev/full"), "dev-full"),
        (loop, "symlink-loop"),
        (dangling, "dangling-symlink"),
        (to_plan, "symlink-to-input"),
        (fifo, "fifo"),
    ):
        # these read the instance, not the plan: a plan may replace a plan, never the input
        inst, own = {plan: (instance, "same-as-input"), to_plan: (to_instance, label)}.get(
            out, (out, label)
        )
        yield f"out-{own}", ["solve", instance, "--json", inst], [instance, kept]
        yield f"out-{own}", ["solve", instance, "--markdown", inst], [instance, kept]
        yield f"out-{own}", ["solve", instance, "--export-mps", inst], [instance, kept]
        yield f"out-{own}", ["explain", instance, "--json", inst], [instance, kept]
        yield f"out-{own}", ["compare", instance, instance, "--json", inst], [instance, kept]
        yield f"out-{label}", ["verify", ONE, plan, "--json", out], [plan, kept]
        yield (
            f"out-{label}",
            ["simulate", ONE, plan, "--duration-s", "5", "--json", out],
            [plan, kept],
        )
        yield f"out-{label}", ["report", ONE, "--plan", plan, "-o", out], [plan, kept]
        yield (
            f"out-{label}",
            ["deploy", plan, "--instance", ONE, "--target", "vllm", "-o", out],
            [plan, kept],
        )
        yield (
            f"out-{label}",
            ["calibrate", folder / "runs.csv", "-o", out, "--no-leave-one-out"],
            [plan, kept],
        )
        yield (
            f"out-{label}",
            ["fleet-import", folder / "k8s", "--instance", ONE, "--instance-out", out],
            [plan, kept],
        )
        if out not in (plan, to_plan):  # a plan may replace a plan
            yield (
                f"out-{label}",
                [
                    "fleet-import",
                    folder / "k8s",
                    "--instance",
                    ONE,
                    "--instance-out",
                    folder / "o2.yaml",
                    "--plan-out",
                    out,
                ],
                [kept],
            )
        yield f"out-{label}", ["estimate", "--json", out], [plan, kept]
        yield f"out-{label}", ["perf", *PERF, "--json", out], [plan, kept]
        yield f"out-{label}", ["sweep", folder / "grid-base.yaml", "--out", out], [plan, kept]
    yield (
        "out-equals-instance",
        [
            "fleet-import",
            folder / "k8s",
            "--instance",
            folder / "inst.yaml",
            "--instance-out",
            folder / "inst.yaml",
        ],
        [folder / "inst.yaml"],
    )
    yield (
        "out-equals-input",
        ["calibrate", folder / "runs.csv", "-o", folder / "runs.csv"],
        [folder / "runs.csv"],
    )
