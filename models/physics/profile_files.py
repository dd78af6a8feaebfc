"""Engine profiles in files of their own: what `fleetplan calibrate` writes and what
`engine: ./PROFILE.yaml` (an instance) or `--engine PROFILE.yaml` (perf, estimate) reads.

A profile file holds what a catalog profile in `efficiency.yaml` holds, for one engine
fitted on the user's own measurements:

    kind: fleetplan-engine-profile
    profile: my-vllm-h100           # the name reports print
    fallback: trtllm-0.20           # catalog profile for any key the file does not set
    data: 12 measurements from runs.csv
    by_key:
      default: {prefill_flops_fraction: 0.52, decode_flops_fraction: 0.41, ...}
      h100-sxm: {...}               # optional: per GPU, generation or GPU/precision
    fit:                            # what the fit measured (reports quote it)
      rows: 12
      median_abs_error_pct: 6.1
      leave_one_out_median_abs_error_pct: 8.3

A name is read as a profile file when it ends in `.yaml` or `.yml`; it is read once per
process (by its resolved path), bounded in size, with YAML's safe loader refusing what
an instance's reader refuses (a key given twice, a base-60 or octal number), and every
factor is checked against the `Efficiency` field it sets. A file that does not hold a
profile raises `ProfileFileError` naming the file and the entry.
"""

import math
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from models.physics.catalog import closest_name
from models.physics.yaml_files import BaseSixtyNumber, CheckedLoader, DuplicateKey
from models.schema.quantities import long_name

PROFILE_KIND = "fleetplan-engine-profile"
MAX_PROFILE_BYTES = 1 << 20
"""A profile is a few kilobytes; a megabyte is far past any real one."""
SUFFIXES = (".yaml", ".yml")
PROFILE_KEYS = ("kind", "profile", "fallback", "data", "by_key", "fit")
"""What a profile file holds (what `fleetplan calibrate` writes); any other key is refused."""


class ProfileFileError(ValueError):
    """A profile file that cannot be read or does not hold a profile."""


def is_profile_file(name: str | None) -> bool:
    """Whether an engine name names a profile file rather than a catalog profile."""
    return name is not None and name.lower().endswith(SUFFIXES)


def read_profile_file(name: str, factors: type[BaseModel]) -> dict[str, Any]:
    """The profile held by the file `name` (relative to the working directory), as a
    catalog profile: `{profile, fallback, data, by_key, fit}`, each `by_key` set checked
    as `factors` (the `Efficiency` model) would check it. Raises ProfileFileError."""
    path = Path(name).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as error:
        raise ProfileFileError(f"engine profile file {name}: cannot be read ({error})") from None
    return _read(str(resolved), name, factors)


@cache
def _read(resolved: str, shown: str, factors: type[BaseModel]) -> dict[str, Any]:
    path = Path(resolved)
    if not path.is_file():
        raise ProfileFileError(f"engine profile file {shown}: not a regular file")
    with path.open("rb") as handle:
        data = handle.read(MAX_PROFILE_BYTES + 1)
    if len(data) > MAX_PROFILE_BYTES:
        raise ProfileFileError(
            f"engine profile file {shown}: over {MAX_PROFILE_BYTES:,} bytes; not a profile"
        )
    try:  # read as strictly as an instance: a key twice, 4:16 read as 256 are refused
        document = yaml.load(data.decode("utf-8"), Loader=CheckedLoader)
    except DuplicateKey as dup:
        raise ProfileFileError(
            f"engine profile file {shown}: line {dup.line}: duplicate key {dup.key!r} (first "
            f"on line {dup.first_line}, again on line {dup.line}): the second would "
            "silently replace the first"
        ) from None
    except BaseSixtyNumber as number:
        raise ProfileFileError(
            f"engine profile file {shown}: line {number.line}: {number}"
        ) from None
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise ProfileFileError(f"engine profile file {shown}: not YAML ({error})") from None
    if not isinstance(document, dict) or document.get("kind") != PROFILE_KIND:
        raise ProfileFileError(
            f"engine profile file {shown}: `kind: {PROFILE_KIND}` missing (write one with "
            "`fleetplan calibrate MEASUREMENTS -o PROFILE.yaml`)"
        )
    unknown = [str(key) for key in document if key not in PROFILE_KEYS]
    if unknown:  # a typo (`falback:`) was read as absent: the catalog's default filled in
        close = closest_name(unknown[0], list(PROFILE_KEYS))
        guess = f"; did you mean {close!r}?" if close else ""
        raise ProfileFileError(
            f"engine profile file {shown}: unknown key {unknown[0]!r}{guess} (a profile "
            f"file holds {', '.join(PROFILE_KEYS)})"
        )
    by_key = document.get("by_key")
    if not isinstance(by_key, dict) or "default" not in by_key:
        raise ProfileFileError(f"engine profile file {shown}: `by_key.default` missing")
    fields = factors.model_fields
    for key, values in by_key.items():
        if not isinstance(values, dict):
            raise ProfileFileError(f"engine profile file {shown}: by_key.{key} is not a mapping")
        for field, value in values.items():
            where = f"engine profile file {shown}: by_key.{key}.{field}"
            if field not in fields:
                raise ProfileFileError(f"{where}: not an efficiency factor")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ProfileFileError(f"{where}: {value!r} is not a number")
            if not math.isfinite(value):
                raise ProfileFileError(f"{where}: {value} is not finite")
        try:
            factors(**values)
        except ValidationError as error:
            item = error.errors()[0]
            at = ".".join(str(part) for part in item["loc"])
            message = item["msg"].removeprefix("Value error, ")
            raise ProfileFileError(
                f"engine profile file {shown}: by_key.{key}.{at}: {message}"
            ) from None
    fallback = document.get("fallback")
    if fallback is not None and not isinstance(fallback, str):
        raise ProfileFileError(f"engine profile file {shown}: fallback is not a profile name")
    name = _text(document, "profile", shown)
    if (problem := long_name(name)) is not None:  # printed whole on every report's header
        raise ProfileFileError(f"engine profile file {shown}: profile {problem}")
    fit = document.get("fit")
    if fit is not None and not isinstance(fit, dict):  # was read as no fit, without a word
        raise ProfileFileError(f"engine profile file {shown}: fit is not a mapping")
    fit = fit or {}
    for key in _FIT_SHOWN:
        value = fit.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ProfileFileError(f"engine profile file {shown}: fit.{key} is not a number")
        if value is not None and not 0 <= value < math.inf:  # 'median error inf%' on reports
            raise ProfileFileError(
                f"engine profile file {shown}: fit.{key} must be a finite number >= 0, got {value}"
            )
    return {
        "profile": name or Path(shown).stem,
        "fallback": fallback,
        "data": _text(document, "data", shown),
        "by_key": by_key,
        "fit": fit,
    }


_FIT_SHOWN = ("rows", "median_abs_error_pct", "leave_one_out_median_abs_error_pct")
"""The `fit` figures reports quote (`profile_summary`)."""


def _text(document: dict[str, Any], key: str, shown: str) -> str:
    """The text at `key` ("" when absent). A number is written as text; a list or a
    mapping is refused, since it would be printed whole: YAML aliases let a file of 500
    bytes name a list of 10^9 values, which str() took minutes and gigabytes to write."""
    value = document.get(key)
    if value is None:
        return ""
    if isinstance(value, dict | list | set | tuple | bytes):
        raise ProfileFileError(f"engine profile file {shown}: {key} is not text")
    if isinstance(value, bool):  # as the file spells it, not Python's False
        return "true" if value else "false"
    return str(value)


def profile_summary(profile: dict[str, Any], name: str) -> str:
    """`my-vllm (PROFILE.yaml; fitted on 12 rows, leave-one-out median error 8.3%)`."""
    fit = profile["fit"]
    parts = [name]
    if "rows" in fit:
        parts.append(f"fitted on {fit['rows']} rows")
    if "leave_one_out_median_abs_error_pct" in fit:
        parts.append(f"leave-one-out median error {fit['leave_one_out_median_abs_error_pct']}%")
    elif "median_abs_error_pct" in fit:
        parts.append(f"median error {fit['median_abs_error_pct']}%")
    return f"{profile['profile']} ({'; '.join(parts)})"
