"""Mutations of an input document for the hostile-input fuzz (tests/bench/test_fuzz_hostile.py).

A document is what a file parses to (mappings, lists, scalars). `key_paths` lists every
place in it; each structural mutation changes the value at one place (a wrong type, a
number out of range, an empty container, an unknown key beside it, a key moved into
another section, a name given twice, a name of unicode or of 10,000 characters), and each
text mutation spoils the file as a whole (truncated, binary bytes, a YAML alias bomb,
nesting past any limit, a byte-order mark, a key given twice).

Every mutation says whether a correct reader must refuse it (`must_refuse`): a value of the
wrong type, a NaN or an unknown key accepted with exit 0 is a value dropped or misread; a
zero or a huge number may be a fine input, and only a crash or a hang counts there.
"""

import copy
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Mutant:
    """One mutated document (or text) and what a correct reader does with it."""

    kind: str
    """The mutation class (`type:text->number`, `number:nan`, `unknown-key`, ...)."""
    where: Path
    """The key path changed (empty for a text mutation)."""
    document: Any = None
    text: bytes | None = None
    """The file's bytes where the mutation is of the text, not of the document."""
    must_refuse: bool = True
    edit: tuple[Any, Any] | None = None
    """(the document, the new value at `where`) of a value mutant, whose document is made
    when it is run (`built`), not when it is drawn: a rich plan's every key path times a
    dozen mutations, each a copy of the whole plan (growth-horizon's, `--rich-plans`),
    took the fuzz past 8 GB before its first run."""

    def built(self) -> Any:
        """The mutated document."""
        if self.edit is None:
            return self.document
        document, new = self.edit
        return _set(document, self.where, new)


def key_paths(document: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) of `document`, depth first, the root excluded."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield (*prefix, key), value
            yield from key_paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield (*prefix, index), value
            yield from key_paths(value, (*prefix, index))


def _set(document: Any, path: Path, value: Any) -> Any:
    changed = copy.deepcopy(document)
    parent = changed
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return changed


def _parent(document: Any, path: Path) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_mutants(document: Any, path: Path, value: Any) -> Iterator[Mutant]:
    """Mutations of the value at `path`."""

    def at(kind: str, new: Any, must_refuse: bool = True) -> Mutant:
        return Mutant(kind, path, must_refuse=must_refuse, edit=(document, new))

    if _is_number(value):
        yield at("number:nan", math.nan)
        yield at("number:inf", math.inf)
        yield at("number:-inf", -math.inf)
        yield at("number:negative", -abs(value) - 1, must_refuse=False)
        yield at("number:zero", 0, must_refuse=False)
        yield at("number:huge", 10**30, must_refuse=False)
        yield at("number:tiny", 1e-300, must_refuse=False)
        yield at("type:number->text", "twelve")
        yield at("type:number->bool", True)
        yield at("type:number->list", [value])
        yield at("type:number->map", {"value": value})
        yield at("type:number->null", None, must_refuse=False)  # null: not given
    elif isinstance(value, str):
        yield at("type:text->number", 12)
        yield at("type:text->bool", False)
        yield at("type:text->list", [value])
        yield at("type:text->map", {value: 1})
        yield at("type:text->null", None, must_refuse=False)
        yield at("text:empty", "", must_refuse=False)
        yield at("text:long", value + "x" * 10_000, must_refuse=False)
        yield at("text:unicode", value + "\u00e9\u200b\u202e\U0001f600", must_refuse=False)
        yield at("text:control", value + "\x00\x1b[2J", must_refuse=False)
    elif isinstance(value, bool):
        yield at("type:bool->text", "yes please")
        yield at("type:bool->number", 2)
        yield at("type:bool->null", None, must_refuse=False)
    elif isinstance(value, list):
        yield at("container:empty-list", [], must_refuse=False)
        yield at("type:list->map", {"0": value[0]} if value else {"a": 1})
        yield at("type:list->text", "list")
        if value:
            yield at("container:duplicated-item", [*value, copy.deepcopy(value[0])], False)
            yield at("container:nested-list", [value], must_refuse=True)
            yield at("container:null-item", [*value, None])
    elif isinstance(value, dict):
        yield at("container:empty-map", {}, must_refuse=False)
        yield at("type:map->list", list(value.values()))
        yield at("type:map->text", "map")
        yield at("unknown-key", {**value, "frobnicate_ms": 5})
        yield at("unknown-key:near-miss", {**value, _near_miss(value): 1})
    elif value is None:
        yield at("type:null->text", "nothing")


def _near_miss(mapping: dict) -> str:
    """An unknown key one letter off an existing one (a typo a user makes)."""
    for key in mapping:
        if isinstance(key, str) and len(key) > 3:
            return key[:-1] + ("x" if key[-1] != "x" else "y")
    return "nmae"


def moved_key_mutants(document: Any, rng: random.Random, count: int) -> Iterator[Mutant]:
    """A key of one mapping copied into another mapping where it is not one of the keys."""
    mappings = [(p, v) for p, v in key_paths(document) if isinstance(v, dict) and v]
    if isinstance(document, dict):
        mappings.append(((), document))
    if len(mappings) < 2:
        return
    for _ in range(count):
        (_, items), (target, into) = rng.sample(mappings, 2)
        key = rng.choice([k for k in items if isinstance(k, str)] or [None])
        if key is None or key in into:
            continue
        changed = copy.deepcopy(document)
        holder = _parent(changed, (*target, None)) if target else changed
        holder[key] = copy.deepcopy(items[key])
        yield Mutant("moved-key", (*target, key), changed)


def duplicate_name_mutants(document: Any) -> Iterator[Mutant]:
    """A list of named items with its first item given twice."""
    for path, value in key_paths(document):
        if isinstance(value, list) and value and isinstance(value[0], dict) and "name" in value[0]:
            yield Mutant(
                "duplicate-name", path, _set(document, path, [*value, copy.deepcopy(value[0])])
            )


def text_mutants(text: bytes, rng: random.Random) -> Iterator[Mutant]:
    """Mutations of the file's bytes."""
    # a cut that still parses drops keys no reader can miss: only a crash counts
    yield Mutant("text:truncated", (), text=text[: max(1, len(text) * 2 // 3)], must_refuse=False)
    yield Mutant("text:truncated-mid-token", (), text=text[: len(text) // 2 + 1], must_refuse=False)
    yield Mutant("text:empty-file", (), text=b"")
    yield Mutant("text:binary", (), text=bytes(rng.randrange(256) for _ in range(600)))
    yield Mutant(
        "text:nul-inside", (), text=text[: len(text) // 3] + b"\x00" + text[len(text) // 3 :]
    )
    yield Mutant("text:latin1", (), text=text + b"\n# caf\xe9\n")
    yield Mutant("text:bom", (), text=b"\xef\xbb\xbf" + text, must_refuse=False)
    yield Mutant("text:utf16", (), text=text.decode("utf-8", "replace").encode("utf-16"))
    yield Mutant("text:alias-bomb", (), text=_alias_bomb())
    yield Mutant("text:deep-nesting", (), text=b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    yield Mutant("text:deep-maps", (), text=b"a: " + b"{b: " * 3000 + b"1" + b"}" * 3000 + b"\n")
    yield Mutant("text:scalar-document", (), text=b"just some words\n")
    yield Mutant("text:list-document", (), text=b"- 1\n- 2\n")
    yield Mutant("text:two-documents", (), text=text + b"\n---\n" + text)
    if b"  " in text:
        yield Mutant("text:tabs", (), text=text.replace(b"  ", b"\t", 3), must_refuse=False)
    yield Mutant("text:crlf", (), text=text.replace(b"\n", b"\r\n"), must_refuse=False)
    yield Mutant("text:merge-key", (), text=b"base: &b {x: 1}\n" + text + b"\nmerged: {<<: *b}\n")
    yield Mutant("text:custom-tag", (), text=text + b"\nextra: !secret value\n")
    yield Mutant("text:complex-key", (), text=text + b"\n? [a, b]\n: 1\n")
    yield Mutant("text:long-line", (), text=text + b"\nnote: " + b"y" * 2_000_000 + b"\n")
    yield Mutant("text:python-tag", (), text=b"a: !!python/object/apply:os.system ['true']\n")
    lines = text.splitlines(keepends=True)
    keyed = [
        i for i, line in enumerate(lines) if b":" in line and not line.lstrip().startswith(b"#")
    ]
    if keyed:
        i = rng.choice(keyed)
        yield Mutant(
            "text:key-twice", (), text=b"".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
        )
        yield Mutant(
            "text:line-dropped", (), text=b"".join([*lines[:i], *lines[i + 1 :]]), must_refuse=False
        )


def _alias_bomb() -> bytes:
    """Nine levels of nine aliases each: 9**9 (387 million) leaves if expanded."""
    rows = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 10):
        previous = f"*a{level - 1}"
        rows.append(f"a{level}: &a{level} [{', '.join([previous] * 9)}]")
    return ("\n".join(rows) + "\n").encode()


def csv_mutants(text: bytes, rng: random.Random) -> Iterator[Mutant]:
    """Mutations of a CSV file: each cell of each row made wrong, rows and columns spoiled."""
    lines = text.decode("utf-8").splitlines()
    header, rows = lines[0].split(","), [line.split(",") for line in lines[1:]]
    cells = {
        "csv:nan": "nan",
        "csv:inf": "inf",
        "csv:negative": "-3",
        "csv:zero": "0",
        "csv:huge": "1e400",
        "csv:text": "twelve",
        "csv:empty": "",
        "csv:quote": '"x',
        "csv:unicode": "\u00e9\u202e",
        "csv:decimal": "1.5",
        "csv:long": "x" * 20_000,
    }
    for column, name in enumerate(header):
        row = rng.randrange(len(rows)) if rows else None
        if row is None:
            break
        for kind, cell in cells.items():
            changed = [list(r) for r in rows]
            changed[row][column] = cell
            body = "\n".join([lines[0], *(",".join(r) for r in changed)]) + "\n"
            refuse = kind in ("csv:nan", "csv:inf", "csv:huge", "csv:text", "csv:quote")
            yield Mutant(kind, (name,), text=body.encode(), must_refuse=refuse)
    joined = "\n".join(lines)
    yield Mutant(
        "csv:unknown-column",
        ("header",),
        text=(joined.replace(lines[0], lines[0] + ",extra", 1) + "\n").encode(),
    )
    yield Mutant(
        "csv:column-missing",
        ("header",),
        text=("\n".join(",".join(r.split(",")[:-1]) for r in lines) + "\n").encode(),
    )
    yield Mutant("csv:short-row", (), text=(joined + "\n" + ",".join(header[:2]) + "\n").encode())
    yield Mutant("csv:long-row", (), text=(joined + "\n" + lines[-1] + ",9,9\n").encode())
    yield Mutant("csv:header-only", (), text=(lines[0] + "\n").encode())
    yield Mutant("csv:header-twice", (), text=(joined + "\n" + lines[0] + "\n").encode())
    yield Mutant(
        "csv:duplicate-column",
        (),
        text=("\n".join(f"{r},{r.split(',')[0]}" for r in lines) + "\n").encode(),
    )
    yield Mutant(
        "csv:row-twice", (), text=(joined + "\n" + lines[-1] + "\n").encode(), must_refuse=False
    )
    yield Mutant("csv:semicolons", (), text=joined.replace(",", ";").encode())
