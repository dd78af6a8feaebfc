"""The schema's lookups, each the one home of its rule: what a region can field of a GPU
type (`Region.available_gpus`), whether it offers the type (`Region.offers`), and a
workload by name (`Instance.workload`)."""

import pytest

from models.schema.instance import Region
from tests.synthetic import instance, workload

EAST = Region(
    name="east",
    supply={"h100-sxm": {"max_gpus": 8}, "b200": {"max_gpus": 2}},
    existing={"h100-sxm": 4, "h200": 0},
)


@pytest.mark.parametrize(
    ("gpu", "available"),
    [
        ("h100-sxm", 4 + 8),  # owned + purchasable
        ("b200", 0 + 2),  # none owned, 2 to buy
        ("h200", 0 + 0),  # an entry of 0 owned, no supply
        ("mi300x", 0),  # not named at all
    ],
)
def test_available_gpus_are_the_owned_plus_the_purchasable(gpu, available):
    assert EAST.available_gpus(gpu) == available


def test_a_region_offers_what_it_can_buy_or_owns_at_least_one_of():
    assert [g for g in ("h100-sxm", "b200", "h200", "mi300x") if EAST.offers(g)] == [
        "h100-sxm",
        "b200",
    ]


def test_a_workload_is_found_by_its_name():
    fleet = instance(
        {"east": {"h100-sxm": (8, 2.0)}},
        [workload("chat", {"east": 5.0}), workload("code", {"east": 2.0}, prompt_tokens=3000)],
    )
    assert fleet.workload("code") is fleet.workloads[1]
    assert fleet.workload("code").prompt_tokens.mean == 3000
    assert fleet.workload("chat").demand["east"].peak_rps == 5.0
