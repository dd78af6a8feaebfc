"""Offers smaller than a whole server. With policy.buy_unit node (the default) GPUs are
bought in servers of gpus_per_node, at most floor(max_gpus / n) of them: 64 GB200s (72 a
server) offer none. Such an instance was diagnosed "the solver reported infeasibility,
but the elastic re-solve needed no slack: numerical trouble; try another backend". Now
the warnings say what can be bought, and the pre-solve check counts only that."""

import json

from models.io.documents import read_document
from models.io.loading import validate_instance
from models.schema.checks import input_warnings
from solver.analysis.diagnose import usable_gpus
from solver.candidates.table import build_candidates
from solver.program.sets import ProgramSets
from tests.paths import INSTANCES

GB200_PER_SERVER = 72


def _data(max_gpus: dict[str, int], existing: int = 0) -> dict:
    data, _ = read_document(INSTANCES / "region-loss-3.yaml", what="instance")
    data["gpus"] = [{"name": "gb200"}]
    for region in data["regions"]:
        region["supply"] = {"gb200": {"max_gpus": max_gpus[region["name"]]}}
    data["regions"][0]["existing"] = {"gb200": existing}
    return data


def test_an_offer_that_is_no_whole_number_of_servers_is_warned_about():
    instance = validate_instance(_data({"us-east": 64, "us-west": 144, "eu-west": 100}), "x")
    warnings = [w for w in input_warnings(instance) if "servers" in w]
    # floor(64 / 72) = 0 servers; 144 = 2 x 72 is whole; floor(100 / 72) = 1 server, 72 GPUs
    assert len(warnings) == 2
    assert warnings[0].startswith("regions[us-east].supply.gb200.max_gpus: 64 is not a whole")
    assert "at most 0 servers (0 GPUs) can be bought there" in warnings[0]
    assert "at most 1 server (72 GPUs) can be bought there" in warnings[1]


def test_usable_gpus_are_the_fleet_plus_whole_servers():
    instance = validate_instance(_data({"us-east": 100, "us-west": 64, "eu-west": 72}, 8), "x")
    sets = ProgramSets(instance, build_candidates(instance), ())
    assert usable_gpus(sets, "us-east", "gb200") == 8 + GB200_PER_SERVER * (100 // 72)  # 80
    assert usable_gpus(sets, "us-west", "gb200") == 0  # 64 < 72, none owned
    assert usable_gpus(sets, "eu-west", "gb200") == GB200_PER_SERVER


def test_servers_beyond_every_offer_are_a_pre_solve_diagnosis(run_cli, tmp_path):
    file = tmp_path / "gb200.json"
    file.write_text(json.dumps(_data({"us-east": 64, "us-west": 64, "eu-west": 100})))
    result = run_cli("solve", file)
    assert result.exit_code == 3, result.stderr
    assert "found by pre-solve check" in result.stderr
    assert "numerical trouble" not in result.stderr
