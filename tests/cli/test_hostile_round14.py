"""Hostile input, round fourteen: outputs that would grow or lose a file the user had,
names that break a terminal's lines, and numbers at the edges of hours, months and
flags. Each case below was silently accepted, an internal error or a hang; each now names
the field, flag or file with a non-zero exit."""

import os

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def _grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  demand_growth: [1.0]\n")
    return grid


# --- sweep --out onto a file that is not its results ------------------------------------


@pytest.mark.parametrize(
    "first",
    [b"\x00" * 4096, bytes(range(256)), b"\xff\xfe{not json\n"],
    ids=["sparse zeros", "binary", "not UTF-8"],
)
def test_sweep_never_appends_to_a_file_of_bytes(run_cli, tmp_path, first):
    """A 2 GB sparse file (a disk image, a database) given as --out: its first line is
    zeros, which read as a damaged results file, so the sweep read all of it and appended
    its record after the 2 GB. Only an empty file or one opening with a record is its."""
    other = tmp_path / "disk.img"
    other.write_bytes(first)
    os.truncate(other, 64 << 20)  # sparse: 64 MiB of which only `first` is written
    needles = (str(other), "--out", "is not a sweep results file")
    run_checked(run_cli, "sweep", _grid(tmp_path), "--out", other, needles=needles)
    assert other.stat().st_size == 64 << 20
