"""Reading YAML and JSON documents with every resource bounded.

One reader for every file fleetplan takes (instances, plans, golden results, estimate
assumptions). It refuses, with a message that names the limit, what could hang or
exhaust the machine or lose data silently:

- a path that is not a regular file (FIFO, device, socket, directory): checked with
  `os.stat` before opening, and opened non-blocking, so a FIFO never blocks the reader;
- a file over `MAX_DOCUMENT_BYTES` (a plan or golden result, which grows with the fleet
  and its hours: over `MAX_PLAN_BYTES`);
- bytes that are not UTF-8 text (a binary or latin-1 file);
- nesting deeper than `MAX_NESTING_DEPTH`, checked on YAML's event stream before any
  recursive composing, and after JSON's (recursion-guarded) parser;
- more than `MAX_DOCUMENT_NODES` values after YAML alias expansion (billion laughs), and
  aliases that refer to themselves (a JSON instance is held to the same count; JSON
  plans and golden files, which grow with the fleet, only to the byte limit);
- a key given twice in one mapping (YAML or JSON), naming both lines.

All limits on reading live in `models/schema/reading_limits.py`.
"""

import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from models.physics.yaml_files import (  # the YAML 1.1 readings refused, with physics' files
    SAFE_LOADER,
    BaseSixtyNumber,
    DuplicateKey,
)
from models.physics.yaml_files import CheckedLoader as _Loader
from models.schema import reading_limits
from models.schema.errors import InputError, Issue

LineMap = dict[tuple[str | int, ...], int]
"""Line (1-based) of every mapping key and sequence item, by field path."""
Lines = Mapping[tuple[str | int, ...], int]
"""A line map as `read_document` returns it (a JSON file's is computed on first use)."""

_BASE_LOADER = SAFE_LOADER
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))  # fmt: skip


def read_document(path: str | Path, what: str = "instance") -> tuple[Any, Lines]:
    """Parse a YAML or JSON file into plain data and a map from field path to line.

    `.yaml` and `.yml` files are YAML (safe loading only) and `.json` files JSON; for
    any other suffix an instance is refused and other documents are read as JSON.

    Args:
        path: the file.
        what: what the file holds ("instance", "plan", "golden"), for messages; a JSON
            instance is also held to `MAX_DOCUMENT_NODES` (YAML always is, for aliases).

    Raises:
        InputError: naming the file (and line where there is one) when the path is not a
            readable regular file, breaks a limit of `models/schema/reading_limits.py`, is not
            UTF-8, is malformed, or gives a key twice.
    """
    path = Path(path)
    name = str(path)
    suffix = path.suffix.lower()
    if suffix not in INSTANCE_SUFFIXES and what in _AS_INSTANCES:
        if path.is_dir():
            batch = " (`fleetplan batch` solves a folder)" if what == "instance" else ""
            raise _problem(name, f"is a folder, not {_a(what)} file{batch}")
        raise _problem(name, f"unknown file type {path.suffix!r}: use .yaml, .yml or .json")
    text = _decode(name, _read_bytes(path, what))
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text, name)
    return _parse_json(text, name, what)


INSTANCE_SUFFIXES = (".json", ".yaml", ".yml")
"""The file types an instance is read from (`read_document`)."""
_AS_INSTANCES = ("instance", "estimate config", "sweep grid")
"""Files held to an instance's suffixes and JSON size (estimate --config's assumptions and
sweep grids were read as `instance` for that: a folder or device was named an instance file)."""


def _a(what: str) -> str:
    return ("an " if what[0] in "aeiou" else "a ") + what


def instance_text(document: Any, path: str | Path) -> str:
    """`document` as the text of the instance file `path`, in the form `read_document`
    reads it back by the suffix: JSON for `.json`, else YAML (`.yaml`, `.yml`; a caller
    refuses any suffix outside `INSTANCE_SUFFIXES` first, as no command would load it)."""
    if Path(path).suffix.lower() == ".json":
        return json.dumps(document, indent=2) + "\n"
    return yaml.safe_dump(document, sort_keys=False)


def read_text(path: str | Path, what: str) -> str:
    """A text file's content (a CSV of measurements, say) under the same limits as every
    document: a regular file, at most `MAX_DOCUMENT_BYTES`, UTF-8. Raises InputError."""
    path = Path(path)
    return _decode(str(path), _read_bytes(path, what), "text")


def _problem(name: str, message: str, line: int | None = None, field: str = "") -> InputError:
    return InputError([Issue(name, line, field, message)])


def _read_bytes(path: Path, what: str) -> bytes:
    """The file's bytes: regular files only, never more than the size limit."""
    name = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise _problem(name, "no such file") from None
    except OSError as error:
        raise _problem(name, f"cannot read: {error.strerror or error}") from None
    _require_regular(name, info.st_mode, what)
    _require_small(name, info.st_size, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise _problem(name, f"cannot read: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        # the path may have been swapped between stat and open: check what was opened
        _require_regular(name, os.fstat(handle.fileno()).st_mode, what)
        try:
            data = handle.read(_most_bytes(what)[0] + 1)
        except OSError as error:  # EIO on /proc/self/mem, a failing disk, a network mount
            raise _problem(name, f"cannot read: {error.strerror or error}") from None
    _require_small(name, len(data), what)
    return data


def _require_regular(name: str, mode: int, what: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((label for test, label in _FILE_KINDS if test(mode)), "not a regular file")
    raise _problem(name, f"is {kind}, not a regular file ({what} files must be regular files)")


def _most_bytes(what: str) -> tuple[int, str]:
    """The byte limit of a `what` file and its name in models/schema/reading_limits.py."""
    if what in ("plan", "golden"):
        return reading_limits.MAX_PLAN_BYTES, "MAX_PLAN_BYTES"
    return reading_limits.MAX_DOCUMENT_BYTES, "MAX_DOCUMENT_BYTES"


def _require_small(name: str, size: int, what: str) -> None:
    most, constant = _most_bytes(what)
    if size > most:
        kind = f"{what} files" if what in ("plan", "golden") else "files"
        raise _problem(
            name,
            f"is {size:,} bytes or more; {kind} are limited to {most:,} bytes "
            f"({most / 2**20:g} MiB, {constant} in models/schema/reading_limits.py)",
        )


def not_utf8(text: str, what: str) -> str | None:
    """Why `text`, taken from the command line, is not UTF-8 text, or None when it is:
    Python reads an argument's byte that is not UTF-8 (0xff) as a lone surrogate (U+DCFF),
    which no file, plan or profile can hold (a --set value of one was an internal error
    as the plan was written). `what` names the text ("value", "name")."""
    for index, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            code = ord(char)
            shown = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
            return (
                f"{shown} (character {index + 1} of the {what}) is not UTF-8; give UTF-8 "
                "text (the locale's encoding, or a file of UTF-8)"
            )
    return None


def _decode(name: str, data: bytes, kind: str = "YAML or JSON text") -> str:
    """UTF-8 text (a leading byte-order mark dropped), or a message saying what it is
    (binary, `kind` saying what it is not: a CSV is no YAML or JSON)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise _problem(name, f"is {encoding} text; save it as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _problem(
            name,
            f"is a binary file (NUL byte at offset {nul:,}), not {kind}",
            data.count(b"\n", 0, nul) + 1,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise _problem(
            name,
            f"is not UTF-8 text: byte 0x{data[error.start]:02x} cannot be decoded "
            "(a binary or latin-1 file?); save it as UTF-8",
            line,
        ) from None


# --- YAML -----------------------------------------------------------------------------


def _duplicate_issue(name: str, dup: DuplicateKey, field: str = "") -> InputError:
    return _problem(
        name,
        f"duplicate key {dup.key!r} (first on line {dup.first_line}, again on line "
        f"{dup.line}): the second would silently replace the first",
        dup.line,
        field,
    )


@contextmanager
def _read_as_yaml(name: str) -> Iterator[None]:
    """Within: what reading YAML raises becomes an InputError naming `name` (and the line
    where the parser gives one): a key given twice, a syntax error, libyaml's own nesting
    limit, a value Python cannot hold."""
    try:
        yield
    except DuplicateKey as dup:
        raise _duplicate_issue(name, dup) from None
    except BaseSixtyNumber as number:
        raise _problem(name, str(number), number.line) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        if "nesting depth" in problem:  # libyaml's own limit on flow nesting (1,000)
            raise _problem(name, _depth_message(), line) from None
        raise _problem(name, f"YAML syntax: {problem}", line) from None
    except (ValueError, OverflowError) as error:
        raise _problem(name, f"YAML value cannot be read: {_value_problem(error)}") from None


def _parse_yaml(text: str, name: str) -> tuple[Any, LineMap]:
    with _read_as_yaml(name):
        _check_yaml_events(text, name)
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    return data, _yaml_line_map(root)


def yaml_documents(text: str, name: str) -> list[Any]:
    """Every document of a multi-document YAML stream (`---` between them: Kubernetes
    objects), under the limits a file is held to (nesting, values after alias expansion
    counted over the whole stream) and refusing a key given twice in one mapping (`replicas:
    3` then `replicas: 30` kept 30 without a word).

    Raises:
        InputError: naming `name`, the line and the limit or the key.
    """
    with _read_as_yaml(name):
        _check_yaml_events(text, name)
        loader = _Loader(text)
        try:
            documents = []
            while loader.check_node():
                node = loader.get_node()
                documents.append(loader.construct_document(node))
        finally:
            loader.dispose()
    return documents


def check_yaml_text(text: str, name: str) -> None:
    """Refuse YAML text that is not a file (a `--set` value) by the limits a file is held
    to: more than `MAX_DOCUMENT_BYTES`, nesting deeper than `MAX_NESTING_DEPTH`, more than
    `MAX_DOCUMENT_NODES` values after alias expansion (an alias bomb), a self-referring
    alias; nothing is built.
    A syntax error is left to the caller's parser, which names it its own way.

    Raises:
        InputError: naming `name` and the limit.
    """
    _require_small(name, len(text.encode("utf-8", "surrogatepass")), "instance")
    try:
        _check_yaml_events(text, name)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error)
        if "nesting depth" in problem:  # libyaml's own limit: the caller's parser recurses
            raise _problem(name, _depth_message()) from None
        return


def _check_yaml_events(text: str, name: str) -> None:
    """Walk the event stream (no recursion, nothing built) and refuse a document that
    nests too deep, expands past the node limit, or holds a self-referring alias.

    Each collection's expanded size is counted as its events stream by; an alias adds
    the size of the node its anchor names, so `total` is the node count after alias
    expansion, computed without expanding anything.
    """
    frames: list[list[Any]] = []  # [expanded size so far, anchor] per open collection
    sizes: dict[str, int] = {}  # expanded size of each anchored node
    total = 0
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.CollectionStartEvent):
            frames.append([1, event.anchor])
            if len(frames) > reading_limits.MAX_NESTING_DEPTH:
                raise _problem(name, _depth_message(), line)
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            size, anchor = frames.pop()
            if anchor is not None:
                sizes[anchor] = size
            if frames:
                frames[-1][0] += size
            continue
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(event, yaml.AliasEvent):
                if any(frame[1] == event.anchor for frame in frames):
                    raise _problem(
                        name, f"alias *{event.anchor} refers to a node that contains it", line
                    )
                size = sizes.get(event.anchor, 1)
            else:
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            total += size
            if frames:
                frames[-1][0] += size
        if total > reading_limits.MAX_DOCUMENT_NODES:
            raise _problem(name, _nodes_message(), line)


def _value_problem(error: Exception) -> str:
    """What a value error while parsing means (most often: an integer of 5,000 digits)."""
    if "digits" in str(error):
        return f"a number has more than {sys.get_int_max_str_digits():,} digits"
    return str(error)


def _depth_message() -> str:
    return (
        f"nesting deeper than {reading_limits.MAX_NESTING_DEPTH} levels (MAX_NESTING_DEPTH in "
        "models/schema/reading_limits.py; fleetplan's own files nest at most 7)"
    )


def _nodes_message(yaml_aliases: bool = True) -> str:
    where = " after YAML alias expansion" if yaml_aliases else ""
    return (
        f"more than {reading_limits.MAX_DOCUMENT_NODES:,} values{where} (MAX_DOCUMENT_NODES in "
        "models/schema/reading_limits.py): too large"
        + (", or an alias bomb" if yaml_aliases else "")
    )


def _yaml_line_map(root: yaml.Node | None) -> LineMap:
    lines: LineMap = {}

    def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key_path = (*path, str(key_node.value))
                lines[key_path] = key_node.start_mark.line + 1
                typed = _typed_key(key_node)
                if typed is not _TEXT_KEY:  # `true:`, `~:`, `12:`: the key the data holds
                    lines.setdefault((*path, typed), key_node.start_mark.line + 1)
                walk(value_node, key_path)
        elif isinstance(node, yaml.SequenceNode):
            for index, child in enumerate(node.value):
                walk(child, (*path, index))

    if root is not None:
        walk(root, ())
    return lines


_TEXT_KEY = object()
"""`_typed_key`'s answer for a key the data holds as the text the file spells."""


def _typed_key(node: yaml.Node) -> Any:
    """The value a plain scalar key that is not text is read as (`true` True, `~` None,
    `0x1f` 31), by which pydantic names it in an error's location; `_TEXT_KEY` otherwise."""
    tag = node.tag.rsplit(":", 1)[-1]
    if not isinstance(node, yaml.ScalarNode) or tag not in ("null", "bool", "int", "float"):
        return _TEXT_KEY
    try:
        return yaml.constructor.SafeConstructor().construct_object(node)
    except (yaml.YAMLError, ValueError, TypeError):
        return _TEXT_KEY


# --- JSON -----------------------------------------------------------------------------


def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object from its pairs (`json.loads`' object_pairs_hook), refusing a key given
    twice (`DuplicateKey`, its lines unknown): json.loads keeps the last without a word.
    The one check for every JSON fleetplan reads: documents here, a sweep's results lines,
    fleet-import's annotations and schedules."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key, None, None)
            seen.add(key)
    return data


def _parse_json(text: str, name: str, what: str) -> tuple[Any, Lines]:
    try:
        data = json.loads(text, object_pairs_hook=once_each)
    except DuplicateKey:
        _, where = _json_lines(text)
        if where is None:  # the scanner always finds it; keep a message regardless
            raise _problem(name, "a key is given twice in one object") from None
        path, dup = where
        raise _duplicate_issue(name, dup, dotted(path)) from None
    except json.JSONDecodeError as error:
        raise _problem(name, f"JSON syntax: {error.msg}", error.lineno) from None
    except RecursionError:
        raise _problem(name, _depth_message()) from None
    except ValueError as error:
        raise _problem(name, f"JSON value cannot be read: {_value_problem(error)}") from None
    _check_tree(data, name, reading_limits.MAX_DOCUMENT_NODES if what in _AS_INSTANCES else None)
    return data, _LazyLines(text)


def _check_tree(data: Any, name: str, max_nodes: int | None) -> None:
    """Nesting depth (and, when `max_nodes` is given, value count) of parsed JSON, walked
    without recursion."""
    stack = [(data, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if max_nodes is not None and count > max_nodes:
            raise _problem(name, _nodes_message(yaml_aliases=False))
        if isinstance(value, (dict, list)):
            if depth > reading_limits.MAX_NESTING_DEPTH:
                raise _problem(name, _depth_message())
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


class _LazyLines(Mapping):
    """A JSON document's line map, computed on first use: only an error needs lines, and
    scanning a large file in Python takes a while (about 2 s per 4 MB)."""

    def __init__(self, text: str):
        self._text = text
        self._lines: LineMap | None = None

    def _map(self) -> LineMap:
        if self._lines is None:
            self._lines, _ = _json_lines(self._text)
        return self._lines

    def __getitem__(self, path: tuple[str | int, ...]) -> int:
        return self._map()[path]

    def __iter__(self) -> Iterator[tuple[str | int, ...]]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _json_lines(text: str) -> tuple[LineMap, tuple[tuple[str | int, ...], DuplicateKey] | None]:
    """Lines of every key and item of well-formed JSON, and the first duplicate key.

    A small scanner over string, punctuation and bare-word tokens; each open container
    keeps its path, its next index (arrays) or the keys seen so far (objects).
    """
    lines: LineMap = {}
    duplicate = None
    stack: list[dict[str, Any]] = []
    line, position = 1, 0
    for match in _JSON_TOKEN.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        token = match.group()
        top = stack[-1] if stack else None
        if token in ("}", "]"):
            stack.pop()
            continue
        if token == ",":
            if top is not None and top["kind"] == "object":
                top["expect_key"] = True
            continue
        if token == ":":
            continue
        if top is not None and top["kind"] == "object" and top["expect_key"]:
            key = json.loads(token)
            if key in top["keys"] and duplicate is None:
                duplicate = (top["path"], DuplicateKey(key, top["keys"][key], line))
            top["keys"].setdefault(key, line)
            top["key"], top["expect_key"] = key, False
            lines[(*top["path"], key)] = line
            continue
        if top is None:
            path: tuple[str | int, ...] = ()
        elif top["kind"] == "array":
            path = (*top["path"], top["index"])
            top["index"] += 1
        else:
            path = (*top["path"], top["key"])
        lines.setdefault(path, line)
        if token in ("{", "["):
            kind = "object" if token == "{" else "array"
            stack.append({"kind": kind, "path": path, "index": 0, "keys": {}, "key": None,
                          "expect_key": True})  # fmt: skip
    return lines, duplicate


def dotted(path: tuple[str | int, ...]) -> str:
    """`workloads[0].demand.us-east` from a field path."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
