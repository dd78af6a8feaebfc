"""A regular file whose read fails (EIO from /proc/self/mem behind a link named .yaml, a
failing disk or network mount) is bad input, exit 2 naming the file: it was an internal
error (OSError, exit 70)."""

import os
import sys

import pytest

from models.io.documents import read_document
from models.schema import reading_limits
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


def test_a_plan_is_held_to_the_plan_limit_not_the_instance_one(tmp_path, monkeypatch):
    """A plan fleetplan wrote grows with its months and hours past what an instance may
    be: read as a plan it is held to MAX_PLAN_BYTES, read as an instance to
    MAX_DOCUMENT_BYTES, each limit exact at the byte count and named when passed."""
    path = tmp_path / "plan.json"
    path.write_text('{"instance": "x", "status": "optimal"}')
    size = path.stat().st_size
    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_BYTES", size - 1)
    monkeypatch.setattr(reading_limits, "MAX_PLAN_BYTES", size)
    assert read_document(path, what="plan")[0]["status"] == "optimal"
    with pytest.raises(InputError, match="MAX_DOCUMENT_BYTES"):
        read_document(path, what="instance")
    monkeypatch.setattr(reading_limits, "MAX_PLAN_BYTES", size - 1)
    with pytest.raises(InputError, match=rf"plan files are limited to {size - 1:,} bytes"):
        read_document(path, what="plan")
