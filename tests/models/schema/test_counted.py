"""counted(): a count and its noun in agreement, as every message prints a count."""

from hypothesis import given
from hypothesis import strategies as st

from models.schema.quantities import counted


def test_one_takes_the_singular_and_every_other_count_the_plural():
    assert counted(1, "period") == "1 period"
    assert counted(1.0, "re-solve") == "1 re-solve"
    assert counted(0, "region") == "0 regions"
    assert counted(3, "GPU") == "3 GPUs"
    assert counted(1024, "server") == "1,024 servers"  # thousands as the messages write them
    assert counted(2, "entry", "entries") == "2 entries"
    assert counted(1, "entry", "entries") == "1 entry"


@given(st.integers(min_value=0, max_value=10**9))
def test_the_noun_is_singular_exactly_when_the_count_is_one(count):
    words = counted(count, "workload").split(" ")
    assert words[0].replace(",", "") == str(count)
    assert (words[1] == "workload") == (count == 1)


def test_a_floor_of_one_reads_in_the_singular_and_unit_symbols_stay_as_they_are():
    from models.schema.limits import Bound
    from models.schema.quantities import out_of_range

    tokens = Bound(100, "tokens", "why", low=1.0, low_open=False)
    assert out_of_range(0, tokens) == "must be at least 1 token, got 0"  # was "1 tokens"
    zones = Bound(16, "zones", "why", low=2.0, low_open=False)
    assert out_of_range(1, zones) == "must be at least 2 zones, got 1"
    ms = Bound(100, "ms", "why", low=1.0, low_open=False)
    assert out_of_range(0, ms) == "must be at least 1 ms, got 0"  # a symbol, not a count
    rate = Bound(100, "requests/s", "why")
    assert out_of_range(-1, rate) == "must be greater than 0 requests/s, got -1"


def test_a_zone_loss_with_one_zone_reads_in_the_singular():
    import pytest

    from models.operations.slo import zone_loss_overprovision_factor

    with pytest.raises(ValueError) as raised:
        zone_loss_overprovision_factor(1)
    assert str(raised.value) == "cannot survive losing 1 of 1 zone: need more zones"  # was zone(s)
