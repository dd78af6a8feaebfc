"""Reading the YAML data files that ship with fleetplan (catalogs, fitted constants).

These files are trusted (they are part of the package) and read once per process; what
matters is speed at start-up. libyaml's safe loader parses them about ten times faster
than PyYAML's pure-Python one, so it is used wherever PyYAML was built with it. User
documents (instances, plans) go through `models.documents`, which bounds what it reads.
"""

from pathlib import Path
from typing import Any

import yaml

SAFE_LOADER: type = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
"""libyaml's safe loader where PyYAML was built with it, else PyYAML's own."""


def read_yaml(path: Path) -> Any:
    """The parsed content of a packaged YAML file; None for an empty file."""
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=SAFE_LOADER)
