"""The generated instances (tests.synthetic.generated_data) that benches and tests solve
are the same file in every process: deterministic in their seed, not in the
interpreter's string hashing (PYTHONHASHSEED), so that a bench run beside another, or a
figure quoted from one, solves the instance the other solved."""

import json
import os
import subprocess
import sys

from tests.paths import REPO

PRINT = (
    "import json; from tests.synthetic import generated_data; "
    "print(json.dumps(generated_data(4, 9, 3)))"
)


def _generated(hash_seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", PRINT], capture_output=True, text=True, env=env, cwd=REPO, check=True
    )
    return json.loads(out.stdout)


def test_a_generated_instance_is_the_same_whatever_the_string_hashing():
    """Two hash seeds, one instance, to its models' order: 9 workloads cycle through the
    model menu, so the instance names several models, once each."""
    first, second = _generated("1"), _generated("2")
    assert [m["name"] for m in first["models"]] == [m["name"] for m in second["models"]]
    assert len(first["models"]) > 1
    assert first == second
