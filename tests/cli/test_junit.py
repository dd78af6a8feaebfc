"""`batch --junit`: one test case per instance, failures carrying the regression, in the
shape of the JUnit XML schema (checked here element by element)."""

from xml.etree import ElementTree

from cli.render.junit import junit_xml, outcome_records
from solver.studies.batch import Golden, Outcome, compare

# The JUnit schema (the Jenkins/Ant XSD): required attributes per element and the
# children each may have.
REQUIRED = {
    "testsuites": set(),
    "testsuite": {"name", "tests", "failures", "errors"},
    "testcase": {"name", "classname", "time"},
    "failure": {"message", "type"},
    "system-out": set(),
}
CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"testcase", "properties", "system-out", "system-err"},
    "testcase": {"failure", "error", "skipped", "system-out", "system-err"},
    "failure": set(),
    "system-out": set(),
}


def _check_shape(element: ElementTree.Element) -> None:
    assert REQUIRED[element.tag] <= set(element.attrib), element.tag
    for child in element:
        assert child.tag in CHILDREN[element.tag], f"{child.tag} inside {element.tag}"
        _check_shape(child)
    for attribute in ("tests", "failures", "errors"):
        if attribute in element.attrib:
            assert int(element.attrib[attribute]) >= 0
    if "time" in element.attrib:
        assert float(element.attrib["time"]) >= 0


def _outcome(name: str, cost: float) -> Outcome:
    return Outcome(
        file=f"instances/{name}.yaml", instance=name, status="solved", cost_per_month=cost,
        total_gpus=8, verified=True, runtime_s=0.5,
    )  # fmt: skip


def test_junit_has_a_case_per_instance_and_the_regression():
    golden = Golden(status="solved", cost_per_month=1000.0)
    outcomes = [_outcome("same", 1000.0), _outcome("dearer", 1100.0)]
    comparisons = [compare(o, golden) for o in outcomes]
    root = ElementTree.fromstring(junit_xml(outcomes, comparisons).split("\n", 1)[1])
    _check_shape(root)
    (suite,) = root
    cases = suite.findall("testcase")
    assert [c.attrib["name"] for c in cases] == ["same.yaml", "dearer.yaml"]
    assert suite.attrib["tests"] == "2" and suite.attrib["failures"] == "1"
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert "cost $1,000.00 -> $1,100.00" in failure.attrib["message"]  # +10% > 0.5%
    records = outcome_records(outcomes, comparisons)
    assert [r["verdict"] for r in records] == ["pass", "fail"]
    assert records[1]["reasons"] == list(comparisons[1].regressions)


def test_without_check_an_unsolved_instance_fails():
    outcome = Outcome(file="x.yaml", status="infeasible", message="no GPU fits")
    (record,) = outcome_records([outcome], [None])
    assert record["verdict"] == "fail"
    assert record["reasons"] == ["infeasible: no GPU fits"]
