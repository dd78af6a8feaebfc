"""The generated instances (tests.synthetic.generated_data) that benches and tests solve
are the same file in every process: deterministic in their seed, not in the
interpreter's string hashing (PYTHONHASHSEED), so that a bench run beside another, or a
figure quoted from one, solves the instance the other solved."""

import json
import os
import subprocess
import sys

from tests.paths import REPO
from tests.synthetic import generated

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


def test_one_region_is_an_instance_without_links():
    # a ring of one region was a link from r00 to itself, which the loader refuses ("a link
    # joins two different regions"); a ring of two is one link, of three three (r00-r01,
    # r01-r02, r02-r00: no chords below four regions)
    alone = generated(1, 1, 1, survive="none")
    assert alone.links == [] and [r.name for r in alone.regions] == ["r00"]
    assert len(generated(2, 1, 1).links) == 1
    assert len(generated(3, 1, 1).links) == 3
