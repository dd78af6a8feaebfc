"""explain's JSON carries the gap of its status as a number."""

import json

from tests.paths import INSTANCES


def test_the_gap_in_the_status_is_also_a_number(run_cli, no_engine_effects):
    result = run_cli("explain", INSTANCES / "unified.yaml", "--json", "-")
    assert result.exit_code == 0, result.stderr
    explanation = json.loads(result.stdout)
    solver = explanation["plan"]["solver"]
    assert explanation["mip_gap"] == solver["mip_gap"]
    # optimal means proved within the requested gap; otherwise the status states the gap
    if explanation["status"] == "optimal":
        assert explanation["mip_gap"] <= solver["requested_gap"] + 1e-12
    else:
        assert f"{100 * explanation['mip_gap']:.2f}%" in explanation["status"]
