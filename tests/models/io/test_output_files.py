"""Output files: every target gets the documented behaviour and nothing else is touched."""

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from models.io.output_files import check_target, check_targets, folder_lock, write_text
from models.schema.errors import InputError


def test_new_file_is_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    write_text(target, '{"a": 1}')
    assert target.read_text() == '{"a": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"], "no temporary left behind"


def test_existing_file_is_replaced_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    target.chmod(0o640)
    write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_dash_is_standard_output(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_text("-", "hello")
    assert capsys.readouterr().out == "hello\n"
    assert not (tmp_path / "-").exists(), "never a file named '-'"


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        write_text(fifo, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still a FIFO"


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        check_target(tmp_path)


def test_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_symlink_to_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out.json"
    link.symlink_to(fifo)
    with pytest.raises(InputError, match="FIFO"):
        check_target(link)


def test_input_file_is_never_an_output(tmp_path: Path) -> None:
    instance = tmp_path / "x.yaml"
    instance.write_text("name: x\n")
    with pytest.raises(InputError, match="is the input file"):
        write_text(instance, "{}", inputs=(instance,))
    assert instance.read_text() == "name: x\n"
    link = tmp_path / "alias.json"
    link.symlink_to(instance)
    with pytest.raises(InputError, match="is the input file"):
        check_target(link, inputs=(instance,))


def test_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        check_target(tmp_path / "nowhere" / "plan.json")


def test_unwritable_folder_is_an_input_error(tmp_path: Path, monkeypatch) -> None:
    # Run as root (as CI is), a mode-0555 folder is still writable, so the refusal of the
    # operating system is simulated where it happens: creating the temporary file.
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    target = tmp_path / "plan.json"
    target.write_text("old")
    with pytest.raises(InputError, match="Permission denied"):
        write_text(target, "new")
    assert target.read_text() == "old"


def _writer(path: str, tag: str, rounds: int) -> None:
    for i in range(rounds):
        with folder_lock(Path(path).parent):
            write_text(Path(path), f"{tag}-{i}\n" * 2000)


def test_concurrent_writers_never_leave_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "golden.json"
    target.write_text("start\n")
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_writer, args=(str(target), t, 20)) for t in "ab"]
    for w in writers:
        w.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        lines = set(target.read_text().splitlines())
        assert len(lines) == 1, "a reader saw a mix of two writes"
        seen |= lines
    for w in writers:
        w.join()
        assert w.exitcode == 0
    final = target.read_text().splitlines()
    assert len(set(final)) == 1 and len(final) in (1, 2000)
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def test_an_instance_file_is_never_an_output(tmp_path: Path) -> None:
    """`solve a.yaml --json b.yaml`, b.yaml another instance: refused, b.yaml kept."""
    other = tmp_path / "b.yaml"
    text = "name: b\nregions: []\nworkloads: []\n"
    other.write_text(text)
    with pytest.raises(InputError, match="is an instance file"):
        write_text(other, '{"plan": 1}')
    assert other.read_text() == text
    as_json = tmp_path / "b.json"
    as_json.write_text('{"regions": [], "workloads": [], "gpus": []}')
    with pytest.raises(InputError, match="is an instance file"):
        check_target(as_json)


def test_a_plan_or_other_yaml_is_replaced_as_before(tmp_path: Path) -> None:
    """Only a mapping holding both regions and workloads is an instance: an earlier plan,
    a profile, a file with one of the two keys, or one that does not parse is replaced."""
    for name, text in (
        ("plan.json", '{"instance": "a", "status": "optimal", "regions": 3}'),
        ("profile.yaml", "name: mine\nfit: {}\n"),
        ("half.yaml", "workloads: []\n"),
        ("broken.yaml", "regions: [\nworkloads: ]\n"),
        ("list.json", '[{"regions": [], "workloads": []}]'),
    ):
        target = tmp_path / name
        target.write_text(text)
        write_text(target, "new")
        assert target.read_text() == "new"


def test_an_instance_output_may_replace_an_instance(tmp_path: Path) -> None:
    """`fleet-import --instance-out` writes an instance: run again, it replaces the one it
    wrote (the flag `instance`); a plan given the same path is still refused."""
    written = tmp_path / "owned.yaml"
    written.write_text("name: b\nregions: []\nworkloads: []\n")
    write_text(written, "name: b\nregions: []\nworkloads: []\n# again\n", instance=True)
    assert written.read_text().endswith("# again\n")
    with pytest.raises(InputError, match="is an instance file"):
        check_targets((tmp_path / "plan.json", written), instances=())
    check_targets((tmp_path / "plan.json", written), instances=(written,))


def test_an_existing_target_is_read_once_per_command(tmp_path: Path, monkeypatch) -> None:
    """A command checks its outputs as it starts and each again as it writes it: an
    existing plan.json (up to 8 MiB) was parsed both times. Unchanged, it is read once;
    changed in between (a new size), it is read again and judged afresh."""
    import models.io.documents as documents

    reads: list[Path] = []
    real = documents.read_document
    monkeypatch.setattr(
        documents, "read_document", lambda p, *a, **k: reads.append(p) or real(p, *a, **k)
    )
    plan = tmp_path / "plan.json"
    plan.write_text('{"status": "optimal", "replicas": []}')
    check_targets((plan,))
    write_text(plan, '{"status": "optimal"}')  # the second check: no second read
    assert len(reads) == 1
    plan.write_text('{"regions": [], "workloads": [], "name": "now an instance"}')
    with pytest.raises(InputError, match="is an instance file"):
        write_text(plan, "{}")
    assert len(reads) == 2
