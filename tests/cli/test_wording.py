"""What the tables say, read as a newcomer reads them: effects named in words, not as
the JSON's keys."""

import json

from tests.paths import ONE_MODEL_ONE_REGION


def test_engine_effects_are_named_in_words_in_the_table_and_by_key_in_json(run_cli, tmp_path):
    report = tmp_path / "explain.json"
    result = run_cli("explain", ONE_MODEL_ONE_REGION, "--markdown", "-", "--json", report)
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "| all on |" in line)
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    assert cells[5:9] == ["batching", "preemption", "prefill interference", "head-of-line blocking"]
    assert "hol_blocking" not in result.stdout
    effects = json.loads(report.read_text())["engine_effects"]
    assert effects and set(effects[0]["off_p99_ms"]) == {
        "batching", "preemption", "interference", "hol_blocking"
    }  # fmt: skip
