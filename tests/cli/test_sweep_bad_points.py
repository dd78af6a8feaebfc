"""A sweep whose points are not valid instances. A grid over a base that is no instance
(here the grid file itself) printed "1 points, 0 to solve (1 already in None)", an empty
plans table and exit 1, never saying what was wrong; a bad point in a good grid was
only a `bad_input` cell. Now a grid with no valid point exits 2 with the base's problems,
and each bad point of a mixed grid says why on stderr."""

from tests.paths import ONE_MODEL_ONE_REGION

DEMAND = "workloads[chat].demand.us-east.peak_requests_per_s"


def test_a_grid_without_a_valid_point_exits_2_with_the_problems(run_cli, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {grid}\naxes:\n  policy.survive: [none]\n")
    result = run_cli("sweep", grid)
    assert result.exit_code == 2, result.stderr
    assert f"{grid}: no point is a valid instance; policy.survive=none:" in result.stderr
    # the grid names itself as its instance: the file is named for what it is
    assert f"{grid}:1: is a sweep grid (it has axes and no workloads)" in result.stderr
    assert "already in None" not in result.stderr


def test_a_bad_point_of_a_good_grid_says_why_and_the_rest_solve(run_cli, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"instance: {ONE_MODEL_ONE_REGION}\nset: {{policy.buy_unit: gpu}}\n"
        f"axes:\n  {DEMAND}: [2, -1]\n"
    )
    result = run_cli("sweep", grid)
    assert result.exit_code == 0, result.stderr
    assert f"{DEMAND}=-1: bad_input: " in result.stderr
    assert "must be greater than 0 requests/s, got -1" in result.stderr
    assert "2 points, 1 to solve on local" in result.stderr  # nothing resumed
