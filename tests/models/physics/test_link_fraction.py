"""A borrowing GPU's own measured link fraction (`GpuSpec.scaleup_fraction`): RTX PRO 6000
borrows L40S's efficiencies but not its PCIe Gen4 ring."""

from models.physics.catalog import gpu_catalog
from models.physics.collectives import group_link_bytes_per_s
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision


def test_rtx_pro_6000_keeps_its_link_and_borrows_the_rest() -> None:
    rtx = gpu_catalog()["rtx-pro-6000"]
    own = efficiency_for(rtx, Precision.FP8)
    lender = efficiency_for("l40s", Precision.FP8)
    assert rtx.efficiency_like == "l40s" and rtx.scaleup_fraction is not None
    assert own.scaleup_fraction == rtx.scaleup_fraction != lender.scaleup_fraction
    assert own.model_dump(exclude={"scaleup_fraction"}) == lender.model_dump(
        exclude={"scaleup_fraction"}
    )
    # the ring's bytes/s inside a node: 64 GB/s x the measured fraction
    assert group_link_bytes_per_s(rtx, own, 8) == 64e9 * rtx.scaleup_fraction


def test_a_gpu_with_its_own_rows_ignores_the_field() -> None:
    h200 = gpu_catalog()["h200"]
    marked = h200.model_copy(update={"scaleup_fraction": 0.123})
    assert efficiency_for(marked, Precision.FP8) == efficiency_for(h200, Precision.FP8)
