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
