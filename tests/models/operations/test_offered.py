"""Which (region, GPU type) pairs a region offers: a supply entry, or an existing fleet of
at least one GPU; regions in file order, GPU types in `gpus` order."""

from models.operations.site import offered
from tests.synthetic import instance, workload


def test_a_region_offers_what_it_can_buy_or_already_owns():
    # east: H100 on sale; west: 4 H200 owned, 0 B200 owned (no offer), B200 on sale;
    # north: nothing on sale, 0 H100 owned (offers nothing).
    fleet = instance(
        {"east": {"h100-sxm": (8, 2.0)}, "west": {"b200": (4, 5.0)}},
        [workload("chat", {"east": 1.0})],
        gpus=["h100-sxm", "h200", "b200"],
        existing={"west": {"h200": 4, "b200": 0}, "north": {"h100-sxm": 0}},
    )
    pairs = [(region.name, gpu) for region, gpu in offered(fleet)]
    assert pairs == [("east", "h100-sxm"), ("west", "h200"), ("west", "b200")]


def test_every_offer_is_a_supply_entry_or_an_owned_gpu():
    fleet = instance(
        {"east": {"h100-sxm": (8, 2.0)}},
        [workload("chat", {"east": 1.0})],
        existing={"east": {"h200": 2}},
    )
    for region, gpu in offered(fleet):
        assert gpu in region.supply or region.existing[gpu] >= 1
