"""`solve --export-mps`: the exact named program, read back into HiGHS, same optimum."""

import highspy
import pytest

from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.program.build import build_program
from solver.program.export import lp_name, program_text
from solver.settings import SolveSettings
from tests import synthetic


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_written_program_reaches_the_same_optimum(tmp_path, suffix):
    instance = synthetic.instance(
        {"us": {"h100-sxm": (64, 2.40), "h200": (32, 3.10)}},
        [synthetic.workload("chat", {"us": 15.0})],
    )
    program = build_program(instance, build_candidates(instance))
    direct = get_backend("highs").run(program.lp, SolveSettings.of(instance, threads=1))
    path = tmp_path / f"fleet{suffix}"
    path.write_text(program_text(program.lp, suffix), encoding="utf-8")
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("mip_rel_gap", 0.0)
    assert highs.readModel(str(path)) == highspy.HighsStatus.kOk
    highs.run()
    assert highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert highs.getInfo().objective_function_value == pytest.approx(direct.objective, rel=1e-6)
    lp = highs.getLp()
    names = list(program.lp.constraints)
    expected = names if suffix == ".mps" else [lp_name(n) for n in names]
    assert list(lp.row_names_) == expected
    columns = list(program.lp.variables)  # an LP file lists columns as they first appear
    spelled = columns if suffix == ".mps" else [lp_name(n) for n in columns]
    assert sorted(lp.col_names_) == sorted(spelled)


def test_cli_refuses_an_unknown_format(run_cli, tmp_path):
    from tests.paths import DEFAULT_INSTANCE

    result = run_cli("solve", DEFAULT_INSTANCE, "--export-mps", tmp_path / "fleet.txt")
    assert result.exit_code == 2
    assert ".mps or .lp" in result.stderr
