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
