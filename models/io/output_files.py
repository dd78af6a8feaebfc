"""Writing what the user asked for, and nothing else: every output file goes through here.

Rules (the README's "Output files" paragraph says the same to users):

- `-` means standard output, everywhere; what goes there is `terminal_safe` (an escape
  sequence in a name is shown, not obeyed).
- The target is checked before any work is done (`check_target`): a directory, a device,
  a FIFO or a socket is refused, and so is any file the command reads (the instance, the
  plan), so an output can never replace an input, and any instance file at all (a YAML or
  JSON mapping with `regions` and `workloads`: `solve a.yaml --json b.yaml` wrote the plan
  over the instance b.yaml without a word).
- A symbolic link is followed to its target, which must be a regular file or not exist
  yet; the link itself stays a link.
- The text is written to an exclusive, uniquely named temporary file in the target's
  folder, flushed to disk, then renamed over the target in one step: a reader sees the
  old file or the new one, never half of one, and two writers never share a temporary.
- Every failure (missing or read-only folder, full disk) is an `InputError` naming the
  path, which the command line turns into exit code 2.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from models.io.output_kinds import HEAD_BYTES, READ_AT_MOST, OutputKind, described
from models.schema.errors import InputError, Issue

STDOUT = "-"
"""The path that means standard output."""

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on instead of showing: C0 controls but tab and newline
(ESC starts colour, title and screen-clearing sequences), DEL, C1 controls, and the
bidirectional overrides that reorder what is shown."""


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on written out as `\\uNNNN`, so
    that a name holding an escape sequence is shown, not obeyed. The spelling is JSON's
    own escape: JSON on standard output still parses to the same strings."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_LINE_BREAKS = re.compile("[\n\r\u2028\u2029]")
"""Characters that end a line: newline, carriage return and Unicode's line and paragraph
separators (the C0 and C1 others are `terminal_safe`'s)."""


def one_line(text: str) -> str:
    """`text` with its line breaks written out as `\\uNNNN`, as `terminal_safe` writes a
    control character: a name holding a newline ("us\\neast") stays on its line of a
    table, title or message instead of starting a line of its own ("east" alone, under
    the table it was the title of)."""
    return _LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _refuse(path: Path | str, message: str) -> InputError:
    return InputError([Issue(str(path), None, "", message)])


def is_stdout(path: Path | str) -> bool:
    """Whether `path` is the `-` that stands for standard output."""
    return str(path) == STDOUT


def resolved_target(path: Path) -> Path:
    """The file a write to `path` lands in: a symbolic link followed to its end."""
    return Path(os.path.realpath(path))


def check_target(
    path: Path | str,
    inputs: tuple[Path, ...] = (),
    instance: bool = False,
    kind: OutputKind | None = None,
) -> None:
    """Refuse an output path that is not a regular file (or a new one) in a writable folder,
    that is one of the command's own input files, or that holds something other than an
    earlier output of `kind`.

    Args:
        path: Where the user asked the output to go (`-` is always fine).
        inputs: Files the command reads; writing over one of them is refused.
        instance: The output is an instance (`fleet-import --instance-out`), which may
            replace an instance file; any other output may not.
        kind: What the output is (models.io.output_kinds): an existing file is replaced
            only when empty or an earlier output of that kind. None: the caller judges
            (a golden, a deploy file with its mark).

    Raises:
        InputError: naming the path and what is wrong with it.
    """
    if is_stdout(path):
        return
    path = Path(path)
    target = resolved_target(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise _refuse(path, f"cannot be checked: {error.strerror}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise _refuse(path, "is a directory; give a file name")
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(
                path,
                f"is not a regular file ({_kind(info.st_mode)}); fleetplan writes only regular "
                "files (use - for standard output)",
            )
        for source in inputs:
            with contextlib.suppress(OSError):
                if os.path.samefile(target, source):
                    raise _refuse(path, f"is the input file {source}; choose another output path")
        if not instance and _is_instance(target, info):
            raise _refuse(
                path,
                "is an instance file (it has regions and workloads); fleetplan never writes "
                "over one: choose another output path",
            )
    folder = target.parent
    if not folder.is_dir():
        raise _refuse(path, f"folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _refuse(path, f"folder {folder} is not writable")
    if info is not None and instance and info.st_size and not _is_instance(target, info):
        raise _refuse(
            path,
            "exists and is not an instance file; an instance is written over an instance "
            "only: choose another output path, or remove the file first",
        )
    if info is not None and kind is not None and not instance:
        _check_kind(path, target, info, kind)


INSTANCE_KEYS = frozenset({"regions", "workloads"})
"""Top-level keys only an instance has (a plan, a golden, an engine profile, a sweep's
results and fleetplan's other outputs have neither both nor one of them at the top)."""


_JUDGED: dict[tuple[str, int, int, int, int], bool] = {}
"""`_is_instance`'s answers by (path, device, inode, size, modification time in ns): a
command checks its outputs when it starts (`check_targets`) and each again as it writes
it (`write_text`), and an 8 MiB plan or instance was parsed both times."""


_MOST_JUDGED = 256
"""Answers kept at most (a batch of many outputs starts again past it)."""


def _is_instance(target: Path, info: os.stat_result) -> bool:
    """Whether the existing file `target` reads as an instance: a `.yaml`, `.yml` or
    `.json` file within an instance's size whose document is a mapping holding
    `INSTANCE_KEYS` (what does not parse is no instance, and is left to the writer). A
    file unchanged since it was last judged (same inode, size and time) is not read
    again."""
    from models.io.documents import INSTANCE_SUFFIXES, read_document
    from models.schema.reading_limits import MAX_DOCUMENT_BYTES

    if target.suffix.lower() not in INSTANCE_SUFFIXES or info.st_size > MAX_DOCUMENT_BYTES:
        return False
    key = (str(target), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key in _JUDGED:
        return _JUDGED[key]
    try:
        document, _ = read_document(target)
    except InputError:
        document = None
    if len(_JUDGED) >= _MOST_JUDGED:
        _JUDGED.clear()
    _JUDGED[key] = isinstance(document, dict) and document.keys() >= INSTANCE_KEYS
    return _JUDGED[key]


_KINDS_JUDGED: dict[tuple[str, str, int, int, int, int], str | None] = {}
"""`_check_kind`'s verdicts (None: replaceable, else what the file is) by kind and the
file's identity, as `_JUDGED` keeps `_is_instance`'s."""


def _check_kind(path: Path | str, target: Path, info: os.stat_result, kind: OutputKind) -> None:
    """Refuse to replace the existing file `target` unless it is empty or reads as an
    earlier output of `kind` (models.io.output_kinds): `solve x.yaml --markdown plan.json`
    wrote Markdown over the plan."""
    key = (kind.name, str(target), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _KINDS_JUDGED:
        if len(_KINDS_JUDGED) >= _MOST_JUDGED:
            _KINDS_JUDGED.clear()
        _KINDS_JUDGED[key] = _not_of_kind(path, target, info, kind)
    what = _KINDS_JUDGED[key]
    if what is not None:
        raise _refuse(
            path,
            f"exists and holds {what}, not an earlier {kind.name}; fleetplan writes over a "
            "file only when it is empty or fleetplan's own earlier output of the same kind: "
            "choose another output path, or remove the file first",
        )


def _not_of_kind(
    path: Path | str, target: Path, info: os.stat_result, kind: OutputKind
) -> str | None:
    """None when the file may be replaced by `kind`, else what it is."""
    if info.st_size == 0:
        return None
    if info.st_size > READ_AT_MOST:
        return f"a file of {info.st_size:,} bytes, larger than any output fleetplan writes"
    try:
        with open(target, "rb") as handle:
            data = handle.read(info.st_size if kind.whole else HEAD_BYTES)
    except OSError as error:
        raise _refuse(
            path, f"exists and cannot be read to check what it is: {error.strerror}"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        if kind.whole or error.start < len(data) - 4:  # not a character cut at HEAD_BYTES
            return "a file that is not UTF-8 text"
        text = data[: error.start].decode("utf-8")
    return None if kind.replaces(text) else described(text)


_TWO_ON_STDOUT = (
    "two outputs are - (standard output), where they would run together and neither would "
    "parse: give all but one of them a file name"
)


Output = Path | str | None | tuple[Path | str | None, OutputKind | None]
"""An output path (None: not asked for), or the path with the kind it writes."""


def check_targets(
    paths: Iterable[Output],
    inputs: tuple[Path, ...] = (),
    instances: tuple[Path, ...] = (),
) -> None:
    """`check_target` on each path given (None: an output not asked for), with its kind
    where the item is a (path, kind) pair, and refuse two
    outputs that land in one file (`--json out --markdown out`: the second write replaced
    the first, and both said "wrote"), or both on standard output (`--json - --markdown
    -` wrote JSON and Markdown one after the other, so neither parsed). `instances`: the
    outputs that are instances (`check_target`'s `instance`).

    Raises:
        InputError: naming the path and what is wrong with it.
    """
    seen: list[tuple[Path, Path | str]] = []
    to_stdout = False
    given = [item if isinstance(item, tuple) else (item, None) for item in paths]
    for path, _ in given:  # first: a hard link to another output is that output, whatever it holds
        if path is None:
            continue
        if is_stdout(path):
            if to_stdout:
                raise InputError([Issue("command line", None, STDOUT, _TWO_ON_STDOUT)])
            to_stdout = True
            continue
        target = resolved_target(Path(path))
        for earlier_target, earlier in seen:
            if target == earlier_target or _same_file(target, earlier_target):
                raise _refuse(path, f"is also the output {earlier}; give each output its own file")
        seen.append((target, path))
    for path, kind in given:
        if path is not None:
            check_target(path, inputs, path in instances, kind)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are one file (hard links); False when either is new."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def write_text(
    path: Path | str,
    text: str,
    inputs: tuple[Path, ...] = (),
    instance: bool = False,
    kind: OutputKind | None = None,
) -> None:
    """Write `text` to `path` atomically (or to standard output for `-`).

    Args:
        path: The output path; checked again here (it may have changed since the command
            started).
        text: The whole content.
        inputs: The command's input files, never overwritten.
        instance: The text is an instance, which may replace an instance file
            (`check_target`).
        kind: What the text is: an existing file is replaced only when it is an earlier
            output of that kind (`check_target`).

    Raises:
        InputError: naming the path when it cannot be written.
    """
    if is_stdout(path):  # a terminal, perhaps: shown, never obeyed
        text = terminal_safe(text)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    check_target(path, inputs, instance, kind)
    target = resolved_target(Path(path))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise _refuse(path, f"cannot be written: {error.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp_name, stat.S_IMODE(os.stat(target).st_mode))
        if not os.path.exists(target):
            os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise _refuse(path, f"cannot be written: {error.strerror}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `folder` (a `.fleetplan.lock` file inside it)
    while a group of files in it is rewritten, so that concurrent writers take turns."""
    lock_path = folder / ".fleetplan.lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise _refuse(folder, f"cannot be locked for writing: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
