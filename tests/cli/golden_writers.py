"""A golden writer for the concurrent-update test (tests/cli/test_outputs_and_limits.py),
in a module of its own: each spawned writer imports the module its function is defined
in, and this one imports only the golden writer (0.5 s of CPU a writer, against 1 s for
the test module and its solver imports)."""

from pathlib import Path

from solver.studies.batch import Outcome, write_golden


def update_many(instance_file: str, cost: float, rounds: int) -> None:
    """Write the golden of `instance_file` `rounds` times, at `cost` and 8 GPUs."""
    outcome = Outcome(file=instance_file, status="solved", cost_per_month=cost, total_gpus=8)
    for _ in range(rounds):
        write_golden(Path(instance_file), outcome)
