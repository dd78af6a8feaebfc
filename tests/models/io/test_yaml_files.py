"""Packaged YAML files are read through compiled copies (models/physics/yaml_files.py): the same
content as the YAML, and a copy that is stale, broken or cannot be written never changes
what is read."""

import marshal
from pathlib import Path

import pytest
import yaml

from models.physics import yaml_files
from models.physics.catalog import CATALOG_DIR
from models.physics.yaml_files import compiled_path, read_yaml


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["gpus.yaml", "llms.yaml", "efficiency.yaml"])
def test_a_packaged_file_reads_as_its_yaml(name):
    path = CATALOG_DIR / name
    expected = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert read_yaml(path) == expected  # first read: parsed (or a current copy)
    assert read_yaml(path) == expected  # then from the copy


def test_the_copy_is_written_and_then_read(tmp_path):
    """After one read the copy holds the source's stamp; a copy with the right stamp is
    what the next read returns (shown by planting other content under that stamp)."""
    path = _write(tmp_path / "table.yaml", "h100: {hbm_gib: 80, fp8: true}\n1: [2.5, null]\n")
    assert read_yaml(path) == {"h100": {"hbm_gib": 80, "fp8": True}, 1: [2.5, None]}
    compiled = compiled_path(path)
    stamp, content = marshal.loads(compiled.read_bytes())
    source = path.stat()
    assert tuple(stamp) == (source.st_mtime_ns, source.st_size)
    assert content == {"h100": {"hbm_gib": 80, "fp8": True}, 1: [2.5, None]}
    compiled.write_bytes(marshal.dumps((stamp, {"planted": 1})))
    assert read_yaml(path) == {"planted": 1}


def test_an_edited_source_is_parsed_again(tmp_path):
    path = _write(tmp_path / "table.yaml", "a: 1\n")
    assert read_yaml(path) == {"a": 1}
    _write(path, "a: 22\n")  # another size: another stamp
    assert read_yaml(path) == {"a": 22}
    assert marshal.loads(compiled_path(path).read_bytes())[1] == {"a": 22}


@pytest.mark.parametrize("garbage", [b"", b"\x00\x01not marshal", marshal.dumps(7)])
def test_a_broken_copy_is_ignored_and_rewritten(tmp_path, garbage):
    path = _write(tmp_path / "table.yaml", "a: [1, 2]\n")
    compiled = compiled_path(path)
    compiled.parent.mkdir()
    compiled.write_bytes(garbage)
    assert read_yaml(path) == {"a": [1, 2]}
    assert marshal.loads(compiled.read_bytes())[1] == {"a": [1, 2]}


def test_a_folder_that_cannot_be_written_parses_each_time(tmp_path, monkeypatch):
    path = _write(tmp_path / "table.yaml", "a: 1\n")
    blocked = _write(tmp_path / "a-file", "")  # a copy "inside" a file cannot be written
    monkeypatch.setattr(yaml_files, "compiled_path", lambda _: blocked / "table.marshal")
    assert read_yaml(path) == {"a": 1}
    assert read_yaml(path) == {"a": 1}
    assert {p.name for p in tmp_path.iterdir()} == {"table.yaml", "a-file"}


def test_an_empty_file_reads_as_none(tmp_path):
    path = _write(tmp_path / "empty.yaml", "")
    assert read_yaml(path) is None
    assert read_yaml(path) is None
