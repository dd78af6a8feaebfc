"""Hostile input, round eight: a batch output the run itself reads. `--json
FOLDER/a.expected.json` replaced a's golden with the results (the next --check read a
regression, 'bad golden file'), and `--json FOLDER/out.json` made out.json an instance of
the next run (bad input, exit 1). Both are refused before any work."""

import json
import shutil
from xml.dom import minidom

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


@pytest.fixture
def folder(tmp_path):
    home = tmp_path / "instances"
    home.mkdir()
    shutil.copy(ONE_MODEL_ONE_REGION, home / "a.yaml")
    (home / "a.expected.json").write_text("{}")  # a golden (content not read here)
    return home


@pytest.mark.parametrize(
    ("flag", "name", "kind"),
    [
        ("--json", "a.expected.json", "a golden file"),
        ("--markdown", "b.expected.json", "a golden file"),
        ("--json", "out.json", "an instance file"),
        ("--junit", "report.yaml", "an instance file"),
    ],
)
def test_an_output_the_next_run_would_read_is_refused(run_cli, folder, flag, name, kind):
    target = folder / name
    before = sorted(p.name for p in folder.iterdir())
    needles = (f"command line: {flag}: {target}: is in the folder batch reads, where {kind}",)
    result = run_checked(run_cli, "batch", folder, flag, target, needles=needles)
    assert sorted(p.name for p in folder.iterdir()) == before
    assert (folder / "a.expected.json").read_text() == "{}"
    assert "solving" not in result.stdout


def test_other_outputs_in_the_folder_are_written(run_cli, folder):
    run_checked(
        run_cli, "batch", folder, "--markdown", folder / "summary.md", "--junit",
        folder / "junit.xml", code=0,
    )  # fmt: skip
    assert (folder / "summary.md").is_file() and (folder / "junit.xml").is_file()


def test_the_junit_report_stays_well_formed_xml_whatever_the_names(run_cli, tmp_path):
    # before: an ESC in a region's name (quoted in the failure) and in a file's name went
    # into the XML as is: 'not well-formed (invalid token)' to every reader
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["regions"][0]["name"] = "r\x1b"  # the demand's us-east is now unknown: bad input
    home = tmp_path / "instances"
    home.mkdir()
    (home / "bad\x1b.json").write_text(json.dumps(data), encoding="utf-8")
    report = tmp_path / "junit.xml"
    run_checked(run_cli, "batch", home, "--junit", report, code=1)
    cases = minidom.parse(str(report)).getElementsByTagName("testcase")
    assert [case.getAttribute("name") for case in cases] == ["bad\\u001b.json"]
    failure = cases[0].getElementsByTagName("failure")[0]
    assert "(declared: 'r\\x1b')" in failure.getAttribute("message")  # shown_name
