"""CI outputs of `fleetplan batch`: each instance's verdict, and the run as JUnit XML.

The verdict of one instance: `pass` or `fail`, the word for what was found (`finding`, a
solver.studies.batch.Verdict: regression, bad input, infeasible, input changed, ...) and
the reasons (the regressions against its golden file with `--check`, and under `--strict`
an input change; without it, a plan that is not solved or not verified, with its message:
the parse error of a bad input).
The JUnit file is the shape CI systems read (Jenkins, GitLab, GitHub test reporters): one
`<testsuite>` of one `<testcase>` per instance; a failing instance carries a `<failure>`
whose message is its first reason and whose text lists them all.
"""

import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from models.schema.quantities import counted
from solver.studies.batch import Comparison, Outcome, Verdict, led_by, outcome_verdict

SUITE_NAME = "fleetplan batch"
CLASS_NAME = "fleetplan.batch"


def verdict(
    outcome: Outcome, comparison: Comparison | None, strict: bool = False
) -> dict[str, Any]:
    """`{verdict: pass|fail, finding: word, reasons: [...], improvements: [...]}` of one
    instance (`comparison` with --check; `strict`: an input change fails)."""
    if comparison is not None:
        finding = comparison.verdict
        reasons = list(comparison.regressions)
        if strict and comparison.input_changed:
            reasons.append(comparison.input_changed)
    else:
        finding = outcome_verdict(outcome)
        if finding is Verdict.OK:
            reasons = []
        elif outcome.status == "solved":
            reasons = [f"plan fails the verifier: {outcome.message}"]
        else:
            reasons = [led_by(finding, outcome.message)]
    improvements = list(comparison.improvements) if comparison is not None else []
    return {
        "verdict": "fail" if reasons else "pass",
        "finding": str(finding),
        "reasons": reasons,
        "improvements": improvements,
    }


def outcome_records(
    outcomes: list[Outcome], comparisons: list[Comparison | None], strict: bool = False
) -> list[dict[str, Any]]:
    """The batch JSON: every outcome with its verdict."""
    return [
        {**outcome.model_dump(mode="json"), **verdict(outcome, comparison, strict)}
        for outcome, comparison in zip(outcomes, comparisons, strict=True)
    ]


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even escaped (a file or instance name may)."""


def _xml_safe(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold spelled `\\uNNNN`: an ESC in an
    instance's name made the whole report not well-formed, unreadable to a CI job."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def junit_xml(
    outcomes: list[Outcome], comparisons: list[Comparison | None], strict: bool = False
) -> str:
    """The batch as a JUnit XML document (one testcase per instance); a failure's type is
    the verdict word, its message the first reason."""
    verdicts = [verdict(o, c, strict) for o, c in zip(outcomes, comparisons, strict=True)]
    failures = sum(v["verdict"] == "fail" for v in verdicts)
    suite = ElementTree.Element(
        "testsuite",
        name=SUITE_NAME,
        tests=str(len(outcomes)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{sum(o.runtime_s for o in outcomes):.3f}",
    )
    for outcome, result in zip(outcomes, verdicts, strict=True):
        case = ElementTree.SubElement(
            suite,
            "testcase",
            name=_xml_safe(Path(outcome.file).name),
            classname=CLASS_NAME,
            time=f"{outcome.runtime_s:.3f}",
        )
        if result["verdict"] == "fail":
            failure = ElementTree.SubElement(
                case, "failure", message=_xml_safe(result["reasons"][0]), type=result["finding"]
            )
            failure.text = _xml_safe("\n".join(result["reasons"]))
        else:
            cost = "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.2f}"
            gpus = "- GPUs" if outcome.total_gpus is None else counted(outcome.total_gpus, "GPU")
            ElementTree.SubElement(
                case, "system-out"
            ).text = f"{outcome.status}, {cost}/month, {gpus}"
    suites = ElementTree.Element(
        "testsuites", tests=str(len(outcomes)), failures=str(failures), errors="0"
    )
    suites.append(suite)
    ElementTree.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + ElementTree.tostring(suites, encoding="unicode")
        + "\n"
    )
