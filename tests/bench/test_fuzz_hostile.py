"""The hostile-input fuzz at a fixed seed and budget (`make bench` only: some minutes of
CPU). Every input file kind a command reads is mutated (tests/bench/fuzz_mutate.py: a
wrong type at every key path, NaN, infinities, negative, zero, huge and tiny numbers,
empty lists and maps, unknown and misspelt keys, keys moved to another section, names
given twice, unicode, control characters and 10,000-character names, truncated and
binary files, a YAML alias bomb, deep nesting, a second document, a BOM, UTF-16, tabs,
merge keys, tags, complex keys; for CSV each cell of a row, missing, extra and duplicate
columns), run through the commands that read it in process
(tests/bench/fuzz_targets.py), and judged (tests/bench/fuzz_judge.py); input and output
paths that are no plain file (a folder, /dev/zero, /dev/full, a FIFO, a symlink loop, a
dangling symlink, a symlink to the input, /proc, a path under a file, the input itself,
a file of another kind) run through every command that takes one.

A finding outside `LEFT_ALONE` fails the test, each printed on one line; the classes
tried are printed with their counts. Round 23 found and fixed (tests/cli/
test_hostile_round23.py): `deploy -o` under a file and a pod's `resources.limits` list in
fleet-import (both exit 70), a sweep's null axis value shown as None, config.json shapes
and JSON bench results' figures named by fleetplan's field instead of the file's key, an
engine profile's `fit` list, a genai-perf record list and a trtllm-bench section of
another shape read as absent (exit 0). Round 28 (seeds 2801 and 2802 at 1,500 mutants, the
second with `--solve-instances --rich-plans diurnal-chat-batch,growth-horizon`; tests/cli/
test_hostile_round28.py): a profile's fit figure of inf or NaN read, a bench result's
figure past physics and a trtllm-bench `performance` list named by no key of the file.
Round 29 (seeds 2901 at 1,500 mutants; 2902 with `--solve-instances --rich-plans
disaggregated,procurement-3region,voice-agent`; 2903 `--no-paths --rich-plans
region-loss-2,unified,moe-ep,growth-horizon`; 2904 `--only plan --rich-plans
diurnal-chat-batch,procurement-3region,growth-horizon,disaggregated` and 2905 `--no-paths
--solve-instances --rich-plans kv-tiers-doc-qa,two-generations,prefix-affinity-doc-qa` at
1,200, nothing beyond `LEFT_ALONE`'s classes and a k8s document whose `metadata` is emptied
('holds no pool', judged unnamed);
tests/cli/test_hostile_round29.py): a NUL in a sweep grid's `instance` (exit 70) and
replicas started after a loss 10^30 strong in an hourly plan (deploy and verify past
120 s). Round 31 (seeds 3101 at 1,000 mutants with `--rich-plans
offline-batch,tpot-pooling,zipf-20-models,seed-chat-sizing`; 3102 `--only plan --no-paths
--rich-plans long-prompt-32k-cached,moe-ep,region-loss-3,two-generations,diurnal-chat-batch`
at 1,200; 3103 `--no-paths --solve-instances --rich-plans voice-agent,unified` at 1,000:
nothing beyond `LEFT_ALONE`'s classes, a colocated plan's deploy refused before the field
mutated and a k8s pod's misspelt `nodeSelector`, which fleet-import does not check as it
checks no figure an object leaves out; tests/cli/test_hostile_round31.py, found by hand
on the file kinds the fuzz does not mutate): a batch golden's negative cost read as an
improvement, a golden that is a symlink loop read as none, and a schedule ConfigMap's
1e999 written to the plan-out as null.
Run more at another seed: `python -m
tests.bench.fuzz_run --seed N --budget 2500 [--only plan] [--solve-instances]
[--rich-plans diurnal-chat-batch,disaggregated]`.
"""

import re
from collections import Counter

from tests.bench.fuzz_run import fuzz

SEED = 26
BUDGET = 600
"""Mutants run (the path cases, some 240 more, always run): about 4 minutes of CPU."""

LEFT_ALONE = (
    # a sweep's bad point beside good ones is a `bad_input` cell and a line on stderr,
    # exit 0 (tests/cli/test_sweep_bad_points.py): the grid's other points stand
    (r"accepted", r"grid", r".*", r"axes\..*"),
    # an estimate config's slo of 1e-300 is refused at the incident it makes impossible
    (r"unnamed", r"estimate-config", r"number:tiny", r"slo"),
    # a grid point's refusal names the instance's field, not the grid's axis
    (r"unnamed", r"grid", r".*", r"axes\..*"),
    # a quote opening a CSV cell swallows the rest of the row: named by its row
    (r"unnamed", r"fleet-csv|measurements", r"csv:quote", r".*"),
    # a vllm max_concurrency above its requests is capped at them (as vllm does): the
    # run's figures are then judged at that concurrency, named by the figure refused
    (r"unnamed", r"measurements:vllm", r"number:huge", r"max_concurrency"),
    # a figure the file and a flag both give: named by the flag the user can drop
    (r"unnamed", r"measurements:.*", r".*", r"world_info\.(tp|pp)_size"),
    # a Kubernetes document whose kind is no word is no Deployment: the file holds no pool
    (r"unnamed", r"k8s:.*", r".*", r"0\.kind"),
    # a profile's name written as a number is that number as text (by design)
    (r"accepted", r"profile", r"type:text->(number|bool)", r"profile|data"),
    # the CSV's last column is tpot_mean_ms, one of the three figures, each optional
    (r"accepted", r"measurements", r"csv:column-missing", r"header"),
    # a max-throughput trtllm-bench run's concurrency is its dataset.num_requests: without
    # it the concurrency is named missing
    (
        r"unnamed",
        r"measurements:trtllm-bench",
        r"type:number->null|number:zero",
        r"dataset\.num_requests",
    ),
)
"""Findings judged fine: (what, target, mutation class, where) as regular expressions."""


def _left_alone(finding) -> bool:
    fields = (finding.what, finding.target, finding.kind, finding.where)
    return any(
        all(re.fullmatch(pattern, field) for pattern, field in zip(rule, fields, strict=True))
        for rule in LEFT_ALONE
    )


def test_hostile_inputs_are_refused_clearly_and_quickly():
    tried, findings = fuzz(SEED, BUDGET, log=lambda line: None)
    print(f"\n{sum(tried.values())} runs of {len(tried)} classes:")
    print("  " + ", ".join(f"{kind} {count}" for kind, count in sorted(tried.items())))
    print(f"findings: {dict(Counter(f.what for f in findings))}")
    new = [finding for finding in findings if not _left_alone(finding)]
    assert not new, "\n".join(str(finding)[:400] for finding in new)
