"""A regular file whose read fails (EIO from /proc/self/mem behind a link named .yaml, a
failing disk or network mount) is bad input, exit 2 naming the file: it was an internal
error (OSError, exit 70)."""

import os
import sys

import pytest

from models.io.documents import read_document
from models.schema.errors import InputError


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/mem is Linux's")
def test_a_file_whose_read_fails_is_named_with_the_reason(tmp_path):
    link = tmp_path / "instance.yaml"
    os.symlink("/proc/self/mem", link)  # a regular file of size 0 whose read gives EIO
    with pytest.raises(InputError) as caught:
        read_document(link)
    assert str(caught.value) == f"{link}: cannot read: Input/output error"


def test_the_read_failure_exits_2_through_the_command_line(run_cli, tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/mem is Linux's")
    link = tmp_path / "instance.yaml"
    os.symlink("/proc/self/mem", link)
    result = run_cli("validate", link)
    assert result.exit_code == 2, result.stderr
    assert "cannot read: Input/output error" in result.stderr
