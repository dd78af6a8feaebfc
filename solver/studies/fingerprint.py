"""The fingerprint of what a golden result was solved from: the instance, the catalog and
fleetplan's version.

A golden file records it so that `batch --check` can tell "the plan moved" from "the
question moved": when an instance file, the built-in catalog or the version changed since
the golden was frozen, a difference against it may be the new input's answer, not a
regression of the planner.

Each part is a short SHA-256 digest (16 hex digits):
- instance: the validated instance as JSON, fields the file sets only, keys sorted, so
  comments, layout and key order do not count, and a default that changes with the code
  is the version's part;
- catalog: every data file of the built-in catalog (models/physics/catalog/*.yaml, not the
  modules that read them), name and bytes;
- version: fleetplan's package version, as written.
"""

import hashlib
import json
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from pydantic import BaseModel, ConfigDict

from models.physics.catalog import CATALOG_DIR, DATA_SUFFIX
from models.schema.instance import Instance

DIGEST_HEX_DIGITS = 16


class Fingerprint(BaseModel):
    """What one result was solved from (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance: str
    catalog: str
    version: str

    def changes_from(self, before: "Fingerprint") -> tuple[str, ...]:
        """The parts that differ from `before`, in the order instance, catalog, version."""
        return tuple(
            part for part in ("instance", "catalog", "version")
            if getattr(self, part) != getattr(before, part)
        )  # fmt: skip


def fingerprint(instance: Instance) -> Fingerprint:
    """The fingerprint of solving `instance` with this catalog and this version."""
    fields = instance.model_dump(mode="json", exclude_unset=True)
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return Fingerprint(
        instance=_digest(text.encode()), catalog=catalog_digest(), version=fleetplan_version()
    )


@cache
def catalog_digest() -> str:
    """The digest of the built-in catalog's data files (names and bytes, sorted by name)."""
    hasher = hashlib.sha256()
    for path in sorted(CATALOG_DIR.iterdir()):
        if path.is_file() and path.suffix == DATA_SUFFIX:
            hasher.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()[:DIGEST_HEX_DIGITS]


@cache
def fleetplan_version() -> str:
    """fleetplan's package version ("unknown" in a source tree never installed)."""
    try:
        return package_version("fleetplan")
    except PackageNotFoundError:
        return "unknown"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:DIGEST_HEX_DIGITS]
