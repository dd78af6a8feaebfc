"""The sha256 of every candidate table, workload by workload: the check that a change to the
physics' bookkeeping (issue 33: how often and in what order the capacity is asked) leaves
every number the table holds as it was, to the bit.

    PYTHONPATH=CHECKOUT python -m tests.bench.table_digests OUT.json

in each checkout (the base and this one), then compare the two files (`--compare A B`).
A workload's digest covers its kept candidates (capacity, tabulated curve, ladder, failover
curves, each float by its repr: shortest round trip, so equal reprs are equal bits), its
counts, and every candidate set aside by pruning, finished as `CandidateTable.without`
finishes it; the table's problems are covered by their text. The instances: every
instances/*.yaml and the generated ones of tests/bench/test_candidate_table_cpu.py, each
built in one process (`build_candidates`), CPU seconds beside the digest.
"""

import hashlib
import json
import sys
import time
from pathlib import Path

import yaml

from models.io.loading import load_instance
from solver.candidates.table import CandidateTable, build_candidates
from tests.synthetic import at_policy_defaults, generated_data

REPO = Path(__file__).resolve().parents[2]
GENERATED = {
    "gen-10x20x6-region-default": (10, 20, 6, "region", True),
    "gen-6x8x4-zone": (6, 8, 4, "zone", False),
}


def digests(table: CandidateTable) -> dict[str, str]:
    """Workload -> sha256 of everything the table holds for it."""
    out = {}
    for workload, kept in table.by_workload.items():
        parts = [repr(kept), table.evaluated[workload], table.usable[workload]]
        aside = table.set_aside.get(workload)
        if aside is not None:
            parts.append(repr(tuple(aside.finish(c) for c in aside.paired)))
        out[workload] = hashlib.sha256(repr(parts).encode()).hexdigest()
    out["(problems)"] = hashlib.sha256(repr(table.problems).encode()).hexdigest()
    return out


def instances(folder: Path) -> dict[str, Path]:
    """Every shipped instance and the generated ones (written under `folder`)."""
    found = {path.stem: path for path in sorted((REPO / "instances").glob("*.yaml"))}
    for name, (regions, workloads, gpus, loss, defaults) in GENERATED.items():
        data = generated_data(regions, workloads, gpus, loss, seed=0)
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(at_policy_defaults(data) if defaults else data))
        found[name] = path
    return found


def main(out: Path) -> None:
    folder = out.parent / "generated-instances"
    folder.mkdir(exist_ok=True)
    result = {}
    for name, path in instances(folder).items():
        instance = load_instance(path)
        started = time.process_time()
        table = build_candidates(instance)
        cpu_s = time.process_time() - started
        result[name] = {"cpu_s": round(cpu_s, 3), "digests": digests(table)}
        print(f"{name:32s} {cpu_s:7.2f} s", flush=True)
    out.write_text(json.dumps(result, indent=1))


def compare(a: Path, b: Path) -> int:
    """Print each instance's workloads that differ; 1 when any does."""
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = 0
    for name in sorted(set(left) | set(right)):
        da = left.get(name, {}).get("digests", {})
        db = right.get(name, {}).get("digests", {})
        moved = sorted(w for w in set(da) | set(db) if da.get(w) != db.get(w))
        differ += bool(moved)
        verdict = "DIFFER: " + ", ".join(moved) if moved else "same"
        print(f"{name:32s} {len(da):3d} workloads  {verdict}")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    main(Path(sys.argv[1]))
