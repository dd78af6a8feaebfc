"""The hostile-input fuzz: every input file a command reads, mutated
(tests/bench/fuzz_mutate.py), run through the commands that read it in process
(tests/bench/fuzz_targets.py), each outcome judged (tests/bench/fuzz_judge.py).

Run alone: `python -m tests.bench.fuzz_run --seed 26 --budget 600` prints each finding as
it is found and the counts of the mutation classes tried; `make bench` runs it at a fixed
seed and budget (tests/bench/test_fuzz_hostile.py).
"""

import argparse
import random
import tempfile
from collections import Counter
from pathlib import Path

from tests.bench import fuzz_mutate as mutate
from tests.bench.fuzz_judge import Finding, judge, run
from tests.bench.fuzz_targets import ONE, dumped, mutants, path_cases, targets


def fuzz(
    seed: int,
    budget: int,
    solve_instances: bool = False,
    log=print,
    only: str | None = None,
    paths: bool = True,
    rich_plans: tuple[str, ...] = (),
) -> tuple[Counter, list[Finding]]:
    """Run `budget` mutated inputs (spread over the targets, expensive ones a tenth as
    many), and the path cases; returns the classes tried and the findings."""
    rng = random.Random(seed)
    tried: Counter = Counter()
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        all_targets = targets(folder, solve_instances, rich_plans)
        (folder / "inst.yaml").write_bytes(ONE.read_bytes())
        (folder / "grid-base.yaml").write_bytes(
            next(t.text for t in all_targets if t.name == "grid")
        )
        for label, argv, keep in path_cases(folder) if paths else ():
            before = {p: p.read_bytes() for p in keep if p.is_file()}
            outcome = run(argv)
            tried[label] += 1
            for what, detail in judge(outcome, mutate.Mutant(label, ()), before):
                finding = Finding(
                    what, label, "paths", str(argv[0]), " ".join(map(str, argv[1:]))[-160:], detail
                )
                findings.append(finding)
                log(str(finding))
        if only:
            all_targets = [t for t in all_targets if only in t.name]
        weights = [0.1 if t.expensive else 1.0 for t in all_targets]
        pools = {t.name: mutants(t, rng) for t in all_targets}
        for t in all_targets:
            rng.shuffle(pools[t.name])
        for _ in range(budget):
            target = rng.choices(all_targets, weights)[0]
            if not pools[target.name]:
                continue
            mutant = pools[target.name].pop()
            case = folder / f"case-{sum(tried.values())}"
            case.mkdir()
            path = case / f"input{target.suffix}"
            path.write_bytes(
                mutant.text if mutant.text is not None else dumped(target, mutant.built())
            )
            command = rng.choice(target.commands)
            argv = command(path, case)
            inputs = {
                path: path.read_bytes(),
                folder / "plan.json": (folder / "plan.json").read_bytes(),
            }
            outcome = run(argv)
            tried[mutant.kind] += 1
            if not target.read(mutant):
                mutant = mutate.Mutant(mutant.kind, mutant.where, must_refuse=False)
            for what, detail in judge(outcome, mutant, inputs):
                finding = Finding(
                    what,
                    mutant.kind,
                    target.name,
                    str(argv[0]),
                    ".".join(map(str, mutant.where)) or "-",
                    detail,
                )
                findings.append(finding)
                log(str(finding))
    return tried, findings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--solve-instances", action="store_true")
    parser.add_argument("--only", help="Targets whose name holds this text (e.g. plan).")
    parser.add_argument("--no-paths", action="store_true", help="Skip the path cases.")
    parser.add_argument(
        "--rich-plans", default="", help="Shipped instances whose plans to mutate too (a,b)."
    )
    options = parser.parse_args()
    tried, findings = fuzz(
        options.seed,
        options.budget,
        options.solve_instances,
        log=lambda line: print(line, flush=True),
        only=options.only,
        paths=not options.no_paths,
        rich_plans=tuple(name for name in options.rich_plans.split(",") if name),
    )
    print(f"\n{sum(tried.values())} runs, {len(tried)} classes")
    for kind, count in sorted(tried.items()):
        print(f"  {kind}: {count}")
    print(f"{len(findings)} findings")
    for what, count in Counter(f.what for f in findings).items():
        print(f"  {what}: {count}")


if __name__ == "__main__":
    main()
