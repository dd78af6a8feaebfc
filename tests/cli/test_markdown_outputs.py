"""`--markdown` and `--json` on every command that prints a table (issue 15), and `--json`
on `validate` and `verify` (issue 18): each Markdown table's header and one of its values
are checked against the same figure in the command's JSON."""

import json
import re
from dataclasses import dataclass, field

import pytest

from cli.exit_codes import ExitCode
from models.io.loading import load_instance
from tests.paths import INSTANCES

PERF = [
    "perf", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
    "--input-tokens", "1500", "--output-tokens", "400", "--ttft-p99-ms", "1000",
]  # fmt: skip


@dataclass
class PipeTable:
    """One `## title` section's pipe table: its header row and its rows keyed by it (a
    repeated column name keeps its first cell)."""

    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, str]] = field(default_factory=list)


def pipe_tables(markdown: str) -> dict[str, PipeTable]:
    """Every pipe table of a Markdown report, by its section title."""
    tables: dict[str, PipeTable] = {}
    table = PipeTable()
    for line in markdown.splitlines():
        if line.startswith("## "):
            table = tables.setdefault(line[3:], PipeTable())
        elif line.startswith("| "):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not table.columns:
                table.columns = cells
                continue
            row: dict[str, str] = {}
            for column, cell in zip(table.columns, cells, strict=True):
                row.setdefault(column, cell)
            table.rows.append(row)
    return tables


def only_table(tables: dict[str, PipeTable], starts: str) -> PipeTable:
    """The one table whose title starts with `starts`."""
    (title,) = [title for title in tables if title.startswith(starts)]
    return tables[title]


def test_catalog_gpus_markdown_matches_json(run_cli):
    data = json.loads(run_cli("catalog", "gpus", "--json").stdout)
    result = run_cli("catalog", "gpus", "--markdown")
    assert result.exit_code == ExitCode.OK
    table = only_table(pipe_tables(result.stdout), "GPU catalog")
    assert table.columns == [
        "name", "HBM GiB", "HBM TB/s", "BF16", "FP8", "FP4", "link GB/s", "$/GPU-h",
    ]  # fmt: skip
    rows = {row["name"]: row for row in table.rows}
    assert rows.keys() == {gpu["name"] for gpu in data}
    for gpu in data:
        assert rows[gpu["name"]]["HBM GiB"] == f"{gpu['hbm_gib']:,g}"
        assert rows[gpu["name"]]["BF16"] == f"{gpu['dense_tflops']['bf16']:,g}"
    h100 = next(gpu for gpu in data if gpu["name"] == "h100-sxm")
    fp8 = h100["dense_tflops"]["fp8"]
    assert fp8 >= 1000 and rows["h100-sxm"]["FP8"] == f"{fp8:,g}"  # "1,978", not "1978"


def test_catalog_models_markdown_matches_json(run_cli):
    data = json.loads(run_cli("catalog", "models", "--json").stdout)
    table = only_table(
        pipe_tables(run_cli("catalog", "models", "--markdown").stdout), "LLM catalog"
    )
    assert table.columns[:3] == ["name", "params B", "active B"]
    rows = {row["name"]: row for row in table.rows}
    for llm in data:
        # computed_params_b is rounded to 3 places; the table shows 1.
        assert float(rows[llm["name"]]["params B"]) == pytest.approx(
            llm["computed_params_b"], abs=0.05 + 1e-3
        )
        assert rows[llm["name"]]["layers"] == str(llm["layers"])


@pytest.mark.parametrize("command", [["catalog", "gpus"], PERF])
def test_json_and_markdown_together_is_bad_input(run_cli, command):
    result = run_cli(*command, "--json", "--markdown")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--markdown" in result.stderr


def test_perf_markdown_main_table_matches_json(run_cli):
    data = json.loads(run_cli(*PERF, "--json").stdout)
    markdown = run_cli(*PERF, "--markdown").stdout
    table = only_table(pipe_tables(markdown), "llama-3.1-8b on")
    assert table.columns == ["quantity", "value"]
    values = {row["quantity"]: row["value"] for row in table.rows}
    assert values["requests/s"] == f"{data['requests_per_s']:,.2f}"
    assert values["KV capacity"] == f"{data['kv_capacity_tokens']:,.0f} tokens"
    assert values["limit"] == data["limit"]
    # the limit's reason is the table's note, as the terminal shows it under the table
    assert f"capacity at the SLO; limit {data['limit']}: {data['reason']}" in markdown


def test_perf_markdown_sweep_load_and_tiers_match_json(run_cli):
    extra = ["--sweep", "--rate", "2", "--kv-tiers"]
    data = json.loads(run_cli(*PERF, *extra, "--json").stdout)
    result = run_cli(*PERF, *extra, "--markdown")
    assert result.exit_code == ExitCode.OK
    tables = pipe_tables(result.stdout)

    sweep = only_table(tables, "throughput per GPU vs tokens/s per user")
    assert sweep.columns[:4] == ["batch", "step ms", "tok/s/user", "tok/s/GPU"]
    assert len(sweep.rows) == len(data["frontier"])
    for row, point in zip(sweep.rows, data["frontier"], strict=True):
        assert row["batch"] == f"{point['batch']:,.0f}"
        assert row["tok/s/GPU"] == f"{point['output_tokens_per_s_per_gpu']:,.0f}"

    load = only_table(tables, "at 2.00 requests/s (open loop)")
    assert load.columns == ["quantity", "value"]
    values = {row["quantity"]: row["value"] for row in load.rows}
    assert values["throughput"] == f"{data['throughput_requests_per_s']:,.2f} requests/s"
    assert values["saturation rate"] == f"{data['saturation_requests_per_s']:,.2f} requests/s"

    tiers = only_table(tables, "KV tiers")
    assert tiers.columns[:2] == ["tier", "capacity tokens"]
    assert [row["tier"] for row in tiers.rows] == [t["tier"] for t in data["kv_tiers"]]
    for row, tier in zip(tiers.rows, data["kv_tiers"], strict=True):
        assert row["capacity tokens"] == f"{tier['capacity_tokens']:,.0f}"


def test_simulate_markdown_matches_json(run_cli, tmp_path):
    plan, as_json, as_markdown = (tmp_path / name for name in ("p.json", "s.json", "s.md"))
    instance = str(INSTANCES / "unified.yaml")
    assert run_cli("solve", instance, "--json", str(plan)).exit_code == ExitCode.OK
    args = ["simulate", instance, str(plan), "--duration-s", "30"]
    result = run_cli(*args, "--json", str(as_json), "--markdown", str(as_markdown))
    assert result.exit_code in (ExitCode.OK, ExitCode.CHECK_FAILED), result.stderr
    data = json.loads(as_json.read_text())
    table = only_table(
        pipe_tables(as_markdown.read_text()), f"{data['instance']}, scenario {data['scenario']}"
    )
    assert table.columns[:5] == ["pool", "replicas", "req/s", "TTFT p50", "TTFT p99"]
    assert len(table.rows) == len(data["pools"])
    for row, pool in zip(table.rows, data["pools"], strict=True):
        assert row["replicas"] == str(pool["replicas"])
        assert row["TTFT p99"] == f"{pool['simulated']['ttft_p99_ms']:,.0f}"
    # Markdown on stdout: the terminal tables move to stderr
    to_stdout = run_cli(*args, "--markdown", "-")
    assert to_stdout.stdout.startswith("## ") and "┃" not in to_stdout.stdout
    both = run_cli(*args, "--markdown", "-", "--json", "-")
    assert both.exit_code == ExitCode.BAD_INPUT


def test_validate_json_matches_the_instance(run_cli):
    path = INSTANCES / "chat-3region.yaml"
    result = run_cli("validate", str(path), "--json")
    assert result.exit_code == ExitCode.OK
    data = json.loads(result.stdout)
    instance = load_instance(path)
    peak = sum(d.peak_rps for w in instance.workloads for d in w.demand.values())
    assert data == {
        "file": str(path),
        "ok": True,
        "name": instance.name,
        "workloads": len(instance.workloads),
        "regions": len(instance.regions),
        "gpu_types": len(instance.gpus),
        "peak_requests_per_s": pytest.approx(peak),
        "demand_growth": 1.0,  # none given: the rates as written are planned
    }
    summary = run_cli("validate", str(path)).stdout
    assert f"{data['peak_requests_per_s']:,.1f} peak requests/s" in summary


def test_verify_json_matches_the_summary_line(run_cli, tmp_path):
    plan = tmp_path / "plan.json"
    instance = str(INSTANCES / "unified.yaml")
    assert run_cli("solve", instance, "--json", str(plan)).exit_code == ExitCode.OK
    result = run_cli("verify", instance, str(plan), "--json")
    assert result.exit_code == ExitCode.OK
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["violations"] == []
    summary = run_cli("verify", instance, str(plan)).stdout
    counts = f"{data['gpus_bought']} GPUs bought, {data['total_gpus']} used"
    assert f"{counts}, ${data['cost_per_month']:,.0f}/month" in summary
    checks = len(data["checks"])
    assert f"{checks} scenario check{'' if checks == 1 else 's'}" in summary
    solved = json.loads(plan.read_text())
    assert data["cost_per_month"] == pytest.approx(solved["cost_per_month"])
