"""Hostile input, round fourteen: outputs that would grow or lose a file the user had,
names that break a terminal's lines, and numbers at the edges of hours, months and
flags. Each case below was silently accepted, an internal error or a hang; each now names
the field, flag or file with a non-zero exit."""

import os

import pytest

from models.io.documents import dotted
from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def _grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  demand_growth: [1.0]\n")
    return grid


# --- sweep --out onto a file that is not its results ------------------------------------


@pytest.mark.parametrize(
    "first",
    [b"\x00" * 4096, bytes(range(256)), b"\xff\xfe{not json\n"],
    ids=["sparse zeros", "binary", "not UTF-8"],
)
def test_sweep_never_appends_to_a_file_of_bytes(run_cli, tmp_path, first):
    """A 2 GB sparse file (a disk image, a database) given as --out: its first line is
    zeros, which read as a damaged results file, so the sweep read all of it and appended
    its record after the 2 GB. Only an empty file or one opening with a record is its."""
    other = tmp_path / "disk.img"
    other.write_bytes(first)
    os.truncate(other, 64 << 20)  # sparse: 64 MiB of which only `first` is written
    needles = (str(other), "--out", "is not a sweep results file")
    run_checked(run_cli, "sweep", _grid(tmp_path), "--out", other, needles=needles)
    assert other.stat().st_size == 64 << 20


# --- a name holding a line break stays on its line --------------------------------------


def _broken_names(tmp_path, demand="peak_requests_per_s: 20"):
    """one-model-one-region with its instance, workload and region named across two
    lines ('one\\nNN', 'ch\\nZZ', 'us\\nQQ'): names are accepted, each output shows them."""
    text = (
        ONE_MODEL_ONE_REGION.read_text()
        .replace("name: one-model-one-region", 'name: "one\\nNN"')
        .replace("name: chat\n", 'name: "ch\\nZZ"\n')
        .replace("name: us-east\n", 'name: "us\\nQQ"\n')
        .replace("{us-east: {peak_requests_per_s: 20}}", f'{{"us\\nQQ": {{{demand}}}}}')
    )
    path = tmp_path / "names.yaml"
    path.write_text(text)
    return path


def _lines_begun_by_a_name(text: str) -> list[str]:
    """Lines of `text` that start (or start a table cell) with the part of a name after
    its line break: the break was printed raw."""
    return [
        line for line in text.splitlines() if line.lstrip("│┃| ").startswith(("NN", "ZZ", "QQ"))
    ]


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_a_name_with_a_line_break_stays_on_its_line_in_solve(run_cli, tmp_path, markdown):
    """solve printed 'us\\nQQ', the title of the region's table, as a line 'us' and a line
    'QQ' above the table, and the summary's cells and the Markdown headings alike."""
    args = ("solve", _broken_names(tmp_path)) + (("--markdown", "-") if markdown else ())
    result = run_checked(run_cli, *args, code=0)
    assert _lines_begun_by_a_name(result.stdout + result.stderr) == []
    assert ("us<br>QQ" if markdown else "us\\u000aQQ") in result.stdout


def test_a_name_with_a_line_break_stays_on_its_line_in_messages(run_cli, tmp_path):
    """validate's 'ok' line, a warning and an error each printed the name's break raw."""
    ok = run_checked(run_cli, "validate", _broken_names(tmp_path), code=0)
    assert _lines_begun_by_a_name(ok.stdout) == [] and "ok: one\\u000aNN:" in ok.stdout
    daily = _broken_names(tmp_path, "requests_per_day: 100000")
    warned = run_checked(run_cli, "validate", daily, code=0)
    assert _lines_begun_by_a_name(warned.stderr) == [], warned.stderr
    assert "warning: workloads[ch\\u000aZZ]" in warned.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(daily.read_text().replace('"us\\nQQ": {', '"us\\nXX": {'))
    failed = run_checked(run_cli, "validate", unknown, needles=("demand.us\\u000aXX",))
    assert _lines_begun_by_a_name(failed.stderr) == [], failed.stderr


# --- sweep --executor ray without Ray ---------------------------------------------------


def test_sweep_on_ray_without_ray_is_refused_before_anything_is_written(
    run_cli, tmp_path, monkeypatch
):
    """sweep --executor ray read the grid, said '1 point, 1 to solve on ray x 1', created
    --out (and appended its bad points' records) and only then found Ray missing. The
    flag is checked as it is parsed, as solve's is: no --out file."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    results = tmp_path / "new.jsonl"
    args = ("sweep", _grid(tmp_path), "--executor", "ray", "--out", results)
    result = run_checked(run_cli, *args, needles=("--executor: ray is not installed",))
    assert "to solve" not in result.stderr and not results.exists()


def test_a_line_break_in_a_file_name_or_axis_value_stays_on_its_line(run_cli, tmp_path):
    """batch's table and failure lines printed a file named 'a\\nZZ.yaml' as 'a' and a
    row 'ZZ.yaml'; sweep's progress line an axis value 'x\\nZZ' as a line 'ZZ: solved'."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a\nZZ.yaml").write_text(ONE_MODEL_ONE_REGION.read_text())
    batch = run_checked(run_cli, "batch", folder, "--jobs", "1", code=0)
    assert _lines_begun_by_a_name(batch.stdout + batch.stderr) == []
    assert "a\\u000aZZ.yaml" in batch.stdout
    grid = tmp_path / "grid.yaml"
    grid.write_text(f'instance: {ONE_MODEL_ONE_REGION}\naxes:\n  description: ["x\\nZZ"]\n')
    swept = run_checked(run_cli, "sweep", grid, code=0)
    assert _lines_begun_by_a_name(swept.stdout + swept.stderr) == []
    assert "description='x\\nZZ': solved" in swept.stderr  # the label's shown_name


# --- voice --json means what --json means everywhere -----------------------------------

VOICE = ("voice", "--first-audio-ms", "800", "--endpointing-ms", "200")


def test_voice_json_takes_a_file_or_standard_output_as_every_command(run_cli, tmp_path):
    """voice's --json was a flag of its own: `voice ... --json -` and `--json out.json`
    (the README: '--json FILE writes it to that file', on every command) stopped with
    typer's 'Got unexpected extra argument(s)' (exit 2) and wrote nothing. Budget by
    hand: 800 ms - 200 ms endpointing = 600 ms left, half to TTFT: 300 ms."""
    import json

    written = tmp_path / "budget.json"
    run_checked(run_cli, *VOICE, "--json", written, code=0)
    assert json.loads(written.read_text())["ttft_p99_ms"] == 300.0
    for flag in (("--json", "-"), ("-o", "-"), ("--json",)):
        result = run_checked(run_cli, *VOICE, *flag, code=0)
        assert json.loads(result.stdout)["ttft_p99_ms"] == 300.0  # the table on stderr
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text())
    run_checked(run_cli, *VOICE, "--json", instance, needles=("is an instance file",))


# --- sweep --out on a disk that fills ---------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_results_file_that_cannot_be_written_is_named_not_an_internal_error(
    run_cli, tmp_path, monkeypatch
):
    """A full disk under --out: the record's write raised OSError (ENOSPC) out of the
    sweep, 'internal error: this is a bug in fleetplan' (exit 70). It is the file's
    problem, named as every output's is (exit 2). /dev/full fails every write so."""
    from solver.studies import sweep

    opened = sweep.ResultsFile.__init__

    def on_a_full_disk(self, path):
        opened(self, path)
        self.handle = open("/dev/full", "w", encoding="utf-8")  # noqa: SIM115

    monkeypatch.setattr(sweep.ResultsFile, "__init__", on_a_full_disk)
    results = tmp_path / "results.jsonl"
    needles = (str(results), "--out: cannot be written: No space left on device", "resumes")
    result = run_checked(run_cli, "sweep", _grid(tmp_path), "--out", results, needles=needles)
    assert "internal error" not in result.stderr


# --- text that only Python reads as a number ------------------------------------------


@pytest.mark.parametrize(
    "change",
    ['regions[0].supply.h100-sxm.max_gpus="6_4"',
     'workloads[0].demand.us-east.peak_requests_per_s="2_0"'],
)  # fmt: skip
def test_a_digit_separator_in_an_instance_is_not_a_number(run_cli, change):
    """pydantic read a YAML string "6_4" where a number belongs as 64 (Python's digit
    separator), which the CSV readers refuse since round 13: `validate` said ok with 64
    GPUs on offer. Since round 16 a number in quotes is text ("64" too, round 16's test),
    and the number unquoted is read."""
    needle = "must be a number, got the text"
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", change, needles=(needle,))
    decimal = change.replace('"6_4"', "64").replace('"2_0"', "20")
    ok = run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", decimal, code=0)
    assert "ok:" in ok.stdout


@pytest.mark.parametrize(
    ("path", "value"),
    [(("replicas", 0, "count"), "1_6"), (("cost_per_month",), "1_000"),
     # a plain float of a plan record (no bound): read as its number before
     (("replicas", 0, "requests_per_s_per_replica"), "3_0")],
)  # fmt: skip
def test_a_digit_separator_in_a_plan_is_not_a_number(run_cli, tmp_path, path, value):
    """A plan whose "count" is "1_6" verified as 16 replicas (pydantic reads the text as
    Python does); each such field is now named, as a boolean there is (round 13)."""
    import json

    pool = {
        "workload": "chat",
        "region": "us-east",
        "gpu": "h100-sxm",
        "precision": "fp8",
        "tp": 1,
        "pp": 1,
        "role": "unified",
        "count": 2,
        "requests_per_s_per_replica": 30.0,
    }
    data = {"replicas": [pool], "cost_per_month": 1.0}  # fmt: skip
    node = data
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(data))
    field = dotted(path)
    needle = f"{field}: must be a number, got the text '{value}'"
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=(needle,))
