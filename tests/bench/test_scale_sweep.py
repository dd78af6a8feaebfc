"""The scale sweep across horizons (tests/bench/scale_sweep.py), run by `make bench`:
every generated case through `solve --json` and `verify`, the first of each horizon and
size through `explain --json`, `explain --levers` and `report`, then `batch --update`,
`batch --check` and `sweep` on the small ones. Asserts what must hold at any load: no
traceback, an exit code among 0 / 3 / 4 (1 too for `batch --check`: a plan its limit
stopped may move from its golden), every plan written verifies, and no command
running past twice its limit and `OVERRUN_S` (`explain --levers` on an hourly or month
plan excepted: each lever gets the run's limit, cli.levers.runs_deadline). The matrix
is printed (and written to the temporary folder's matrix.md).

About 40 minutes on 2 idle cores for the whole matrix (`SWEEP_QUICK=1`: the smallest
size of each horizon at the 5 s limit, about 6 minutes).
"""

import os

import pytest

from tests.bench import scale_sweep

QUICK = bool(os.environ.get("SWEEP_QUICK"))
ROWS: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def matrix():
    yield
    print("\n" + scale_sweep.HEADER)
    print("\n".join(ROWS))


def _check(row: dict) -> None:
    ROWS.append(scale_sweep.markdown(row))
    assert not row["traceback"], row["message"]
    moved = row["command"].startswith("batch --check")  # a plan stopped by its limit moves
    assert row["rc"] in ((0, 1, 3, 4) if moved else (0, 3, 4)), (row["rc"], row["message"])
    assert row.get("verified") is not False, row["message"]
    per_lever = row["command"] == "explain --levers" and not row["case"].startswith("gen-")
    if row.get("limit_s") and not per_lever:
        assert row["wall_s"] <= 2 * row["limit_s"] + scale_sweep.OVERRUN_S, row["wall_s"]


CASES = scale_sweep.cases(QUICK)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.label}-{case.limit_s:g}s")
def test_solve_and_verify(case, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp() / "sweep"
    folder.mkdir(exist_ok=True)
    _check(scale_sweep.solve_row(case, folder))


FIRSTS = {(c.horizon, c.size): c for c in reversed(CASES) if not c.features}


@pytest.mark.parametrize("case", FIRSTS.values(), ids=lambda case: case.label)
def test_outputs(case, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp() / "sweep"
    folder.mkdir(exist_ok=True)
    scale_sweep.solve_row(case, folder)
    for row in scale_sweep.output_rows(case, folder):
        _check(row)


def test_batch_and_sweep(tmp_path):
    small = [c for c in CASES if c.size == (3, 3, 2) and c.limit_s == 5.0 and not c.features]
    small = [c for c in small if c.survive != "zone"]
    for row in scale_sweep.batch_rows(small, tmp_path):
        _check(row)
    (tmp_path / f"{small[0].label}.yaml").write_text(
        scale_sweep.yaml.safe_dump(small[0].data, sort_keys=False)
    )
    for row in scale_sweep.sweep_rows(small[0], tmp_path):
        _check(row)
