"""Reading the YAML data files that ship with fleetplan (catalogs, fitted constants).

These files are trusted (they are part of the package) and read once per process; what
matters is speed at start-up. libyaml's safe loader parses them about ten times faster
than PyYAML's pure-Python one, so it is used wherever PyYAML was built with it. User
documents (instances, plans) go through `models.io.documents`, which bounds what it reads.

Compiled copies (issue 19). Parsing the catalogs was still ~5 ms of every run that reads
them (a one-model solve, `catalog gpus`); their content as `marshal` data loads in
0.1 ms. So each file is read through a compiled copy kept beside it the way Python keeps
bytecode: `__pycache__/NAME.yaml.<interpreter tag>.marshal`, holding the source's
modification time and size and the parsed content. A copy whose stamp differs from the
source (the file was edited, or `make calibrate` rewrote it), that cannot be read, or that
does not decode, is ignored and rewritten; where the folder is not writable the YAML is
parsed each time, as before.
"""

import marshal
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

SAFE_LOADER: type = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
"""libyaml's safe loader where PyYAML was built with it, else PyYAML's own."""


def read_yaml(path: Path) -> Any:
    """The parsed content of a packaged YAML file; None for an empty file. Read from its
    compiled copy when that copy is current (module docstring)."""
    source = path.stat()
    stamp = (source.st_mtime_ns, source.st_size)
    compiled = compiled_path(path)
    if compiled is not None:
        try:
            cached_stamp, content = marshal.loads(compiled.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            pass  # no copy yet, or one that does not decode: parse and write it
        else:
            if tuple(cached_stamp) == stamp:
                return content
    with path.open(encoding="utf-8") as handle:
        content = yaml.load(handle, Loader=SAFE_LOADER)
    if compiled is not None:
        _write_compiled(compiled, stamp, content)
    return content


def compiled_path(path: Path) -> Path | None:
    """Where the compiled copy of `path` lives; None for an interpreter without a cache
    tag (its marshal format is not named)."""
    tag = sys.implementation.cache_tag
    return None if tag is None else path.parent / "__pycache__" / f"{path.name}.{tag}.marshal"


def _write_compiled(compiled: Path, stamp: tuple[int, int], content: Any) -> None:
    """Write the copy atomically (a whole file or none); skipped silently where the folder
    cannot be written or the content is not marshal data."""
    import tempfile

    try:
        data = marshal.dumps((stamp, content))
        compiled.parent.mkdir(exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=compiled.parent, prefix=".tmp-")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(temporary, compiled)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, ValueError):
        pass


# --- user YAML: what YAML 1.1 reads that no one writes ----------------------------------
# Instances, plans, grids (models.io.documents), --set values (models.io.overrides) and
# engine profile files (models.physics.profile_files) are read with these loaders.

MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKey(Exception):
    """A key given twice in one YAML mapping (`CheckedLoader`)."""

    def __init__(self, key: Any, first_line: int | None, line: int | None):
        super().__init__(key)
        self.key, self.first_line, self.line = key, first_line, line


class BaseSixtyNumber(Exception):
    """A plain scalar YAML 1.1 reads as a base-60 number: `1:30` is 90, `12:00` is 720."""

    def __init__(self, text: str, value: float, line: int):
        super().__init__(
            f"{text!r} reads in YAML 1.1 as the base-60 number {value:g}, not a time or a "
            "ratio: quote it for text, or write the number in decimal"
        )
        self.line = line


class OctalNumber(BaseSixtyNumber):
    """A plain scalar YAML 1.1 reads as an octal number: `017` is 15, `0100` is 64 (YAML
    1.2 and JSON read 17 and 100, or nothing). Caught where `BaseSixtyNumber` is."""

    def __init__(self, text: str, value: float, line: int):
        Exception.__init__(
            self,
            f"{text!r} reads in YAML 1.1 as the octal number {value:g} (a leading zero): "
            "write the number without it, or quote it for text",
        )
        self.line = line


_OCTAL = re.compile(r"[-+]?0[0-7_]+")
"""YAML 1.1's octal integer: a sign, a leading zero and octal digits (`0` alone is zero);
refused where it reads other than in decimal (`017`, not `-05`, a UTC offset)."""


def _no_base_sixty(construct: Any) -> Any:
    def checked(loader: Any, node: yaml.ScalarNode) -> Any:
        value = construct(loader, node)
        if ":" in str(node.value):  # a deadline of `1:30` hours planned 90
            raise BaseSixtyNumber(str(node.value), value, node.start_mark.line + 1)
        text = str(node.value)
        if not node.style and _OCTAL.fullmatch(text) and value != int(text.replace("_", "")):
            raise OctalNumber(text, value, node.start_mark.line + 1)  # 017 planned 15
        return value

    return checked


class ValueLoader(SAFE_LOADER):  # type: ignore[misc, valid-type]
    """Safe loading that reads a plain scalar's type as YAML 1.2's core schema does
    (`CORE_SCALARS`), for a document and for a `--set` value alike, and refuses a base-60
    or leading-zero number (`BaseSixtyNumber`, `OctalNumber`)."""


INT_TAG, FLOAT_TAG, BOOL_TAG, TIMESTAMP_TAG = (
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "timestamp")
)

CORE_SCALARS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (BOOL_TAG, re.compile(r"(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    (INT_TAG, re.compile(r"[-+]?[0-9]+$|0o[0-7]+$|0x[0-9a-fA-F]+$"), "-+0123456789"),
    (
        FLOAT_TAG,
        re.compile(
            r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"
            r"|[-+]?\.(?:inf|Inf|INF)$|\.(?:nan|NaN|NAN)$"
        ),
        "-+0123456789.",
    ),
    # YAML 1.1's base-60 forms, resolved as numbers only to be refused (`_no_base_sixty`)
    (INT_TAG, re.compile(r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$"), "-+123456789"),
    (FLOAT_TAG, re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*$"), "-+0123456789"),
)
"""Which plain scalars are booleans and numbers, as YAML 1.2's core schema (and JSON, an
editor checking the file against `fleetplan schema`) reads them: `true`/`false`; decimal
integers, `0o` octal and `0x` hexadecimal; decimals with a point or an exponent (`1e9`,
`6.4e1`, `.5E2`), `.inf`, `.nan`. YAML 1.1 (PyYAML's default) read more, each a second
reading of a spelling: digit separators (`6_4` was 64, as `max_gpus: "6_4"`, a flag's 6_4
and a CSV's were refused), `0b` binary, `yes`/`no`/`on`/`off` as booleans (`name: no` was
false), no exponent without a point (`1e9` was text), and dates and times (`2026-01-05` was a
`datetime.date`: `name: 2026-01-05` was refused as not text, `horizon_months: 2026-01-05`
named a Python object; the core schema has no dates). Those are text here: a numeric field
refuses text showing it (models.schema.quantities.not_a_boolean), a name keeps it, and a
switch reads `yes` as pydantic does. Null is the same in both (`~`, `null`, empty)."""

_TYPED = (INT_TAG, FLOAT_TAG, BOOL_TAG, TIMESTAMP_TAG)
"""The tags YAML 1.1 resolves a plain scalar to that `CORE_SCALARS` replaces or drops."""
ValueLoader.yaml_implicit_resolvers = {
    first: [entry for entry in resolvers if entry[0] not in _TYPED]
    for first, resolvers in SAFE_LOADER.yaml_implicit_resolvers.items()
}
for _tag, _pattern, _first in reversed(CORE_SCALARS):  # in order, first: `64` is an int
    for _char in _first:
        ValueLoader.yaml_implicit_resolvers.setdefault(_char, []).insert(0, (_tag, _pattern))
for _tag, _construct in (
    (INT_TAG, yaml.constructor.SafeConstructor.construct_yaml_int),
    (FLOAT_TAG, yaml.constructor.SafeConstructor.construct_yaml_float),
):
    ValueLoader.add_constructor(_tag, _no_base_sixty(_construct))


class CheckedLoader(ValueLoader):
    """Safe loading that refuses a key given twice in one mapping (merge keys aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            first_lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in first_lines:
                        raise DuplicateKey(key, first_lines[key], line)
                    first_lines[key] = line
                except TypeError:  # unhashable key: the base constructor says so
                    break
        return super().construct_mapping(node, deep=deep)
