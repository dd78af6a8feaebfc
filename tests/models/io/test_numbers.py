"""Numbers as files write them (models.io.numbers): ASCII digits only."""

import pytest

from models.io.numbers import is_decimal, whole_number


@pytest.mark.parametrize(("text", "value"), [("16", 16), (" +3 ", 3), ("-2", -2), ("007", 7)])
def test_whole_numbers_of_ascii_digits_read(text, value):
    assert whole_number(text) == value


@pytest.mark.parametrize("text", ["1_6", "\u0662", "1.0", "", "1e3", "١٦"])
def test_what_int_reads_and_no_file_writes_is_none(text):
    assert whole_number(text) is None


@pytest.mark.parametrize("text", ["1500", "14.5", ".5", "1e12", "2.5E-3", "nan", "-Infinity"])
def test_decimals_as_float_writes_them(text):
    assert is_decimal(text)


@pytest.mark.parametrize("text", ["1_500", "\u0661\u0665", "1,5", "0x10", "", "1e"])
def test_what_float_reads_and_no_file_writes_is_refused(text):
    assert not is_decimal(text)
