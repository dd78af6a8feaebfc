"""`solve --export-mps` writes the program where the user asked and nowhere else (issue 36):
the instance's `name` is text, never part of a path, whatever it holds (`../`, an absolute
path, a path through a symbolic link)."""

import os
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.paths import ONE_MODEL_ONE_REGION


def _files_under(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: a file's bytes, a link's target."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[key] = path.read_bytes()
    return found


def _hostile_names(tmp_path: Path) -> dict[str, str]:
    """Names that, joined to a temporary folder as a file name, land in `tmp_path`."""
    upward = os.path.relpath(tmp_path / "up", tempfile.gettempdir())
    return {
        "parent": f"../{upward}",  # /tmp/tmpXXXX/../<tmp_path>/up.mps
        "absolute": str(tmp_path / "absolute"),  # an absolute path replaces the folder
        "symlink": str(tmp_path / "o" / "link"),  # o/link.mps -> victim.txt
    }


@pytest.mark.parametrize("kind", ["parent", "absolute", "symlink"])
@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_the_instance_name_never_becomes_a_path(run_cli, tmp_path, kind, suffix):
    (tmp_path / "o").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n", encoding="utf-8")
    (tmp_path / "o" / f"link{suffix}").symlink_to(victim)
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["name"] = _hostile_names(tmp_path)[kind]
    source = tmp_path / "inst.yaml"
    source.write_text(yaml.safe_dump(data), encoding="utf-8")
    before = _files_under(tmp_path)
    target = tmp_path / f"asked{suffix}"

    result = run_cli("solve", source, "--export-mps", target)

    assert result.exit_code == 0, result.stderr
    after = _files_under(tmp_path)
    assert sorted(set(after) - set(before)) == [target.name]  # the one file asked for
    assert {k: after[k] for k in before} == before  # the victim and the link untouched
    assert "demand" in target.read_text(encoding="utf-8")  # the program: demand rows
