"""Which engine effects bind (`solver.simulate.effects`) and `fleetplan explain`'s table."""

import json

import pytest

from cli.exit_codes import ExitCode
from solver.simulate.effects import BIND_SHARE, binds
from solver.simulate.replay import EFFECTS
from tests.paths import REPO

SMALL = REPO / "tests" / "fixtures" / "one-model-one-region.yaml"


@pytest.mark.parametrize(
    "on_ms, off_ms, expected",
    [
        (100.0, 100.0 * (1 - BIND_SHARE), True),  # exactly the threshold: 5 ms of 100 ms
        (100.0, 96.0, False),  # 4 ms of 100 ms
        (100.0, 130.0, False),  # switching it off made the tail worse: it does not bind
        (None, 900.0, True),  # unbounded only with the effect on
        (100.0, None, False),
    ],
)
def test_an_effect_binds_when_removing_it_cuts_the_p99_by_the_share(on_ms, off_ms, expected):
    assert binds(on_ms, off_ms) is expected


def test_explain_lists_the_binding_effects_of_each_pool(run_cli, tmp_path):
    out = tmp_path / "explain.json"
    result = run_cli("explain", SMALL, "--json", out)
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "Engine effects that bind" in result.stdout
    data = json.loads(out.read_text())
    rows = data["engine_effects"]
    pools = [p for p in data["plan"]["replicas"] if p["count"] > 0]
    assert len(rows) == len(pools)
    for row in rows:
        assert set(row["off_p99_ms"]) == set(EFFECTS)
        expected = {n for n in EFFECTS if binds(row["p99_ms"], row["off_p99_ms"][n])}
        assert set(row["binding"]) == expected
