"""Built-in catalogs of GPUs and LLMs, read from the data files in this folder.

The folder holds the catalog's data files (`CATALOG_DIR`: the GPUs, the LLMs and the fitted
constants, YAML) and the modules that read them: this one the GPUs and LLMs, `moe_efficiency`
the expert-parallel constants. The efficiency factors and error bands are read by
`models.physics.efficiency` and `models.physics.error_bands`."""

from difflib import get_close_matches
from functools import cache
from pathlib import Path
from typing import Any

from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.yaml_files import read_yaml

CATALOG_DIR = Path(__file__).parent
DATA_SUFFIX = ".yaml"
"""The catalog's data files are the folder's files of this suffix (its `.py` files read them)."""


def _read(file_name: str) -> dict[str, dict[str, Any]]:
    return read_yaml(CATALOG_DIR / file_name)


@cache
def gpu_catalog() -> dict[str, GpuSpec]:
    """Every built-in GPU by catalog name."""
    return {name: GpuSpec(name=name, **fields) for name, fields in _read("gpus.yaml").items()}


@cache
def llm_catalog() -> dict[str, LlmSpec]:
    """Every built-in LLM by catalog name."""
    return {name: LlmSpec(name=name, **fields) for name, fields in _read("llms.yaml").items()}


def gpu(name: str) -> GpuSpec:
    """A built-in GPU by name; KeyError naming the closest name and the choices when
    unknown."""
    try:
        return gpu_catalog()[name]
    except KeyError:
        raise KeyError(_unknown("GPU", name, list(gpu_catalog()))) from None


def llm(name: str) -> LlmSpec:
    """A built-in LLM by name; KeyError naming the closest name and the choices when
    unknown."""
    try:
        return llm_catalog()[name]
    except KeyError:
        raise KeyError(_unknown("model", name, list(llm_catalog()))) from None


def closest_name(name: str, known: list[str], cutoff: float = 0.6) -> str | None:
    """The known name `name` most likely meant: one equal but for case ('H100-SXM' for
    'h100-sxm', whose difflib ratio is 0.5), else difflib's closest above `cutoff`."""
    same = [k for k in known if k.casefold() == name.casefold()]
    close = same or get_close_matches(name, known, n=1, cutoff=cutoff)
    return close[0] if close else None


def _unknown(kind: str, name: str, known: list[str]) -> str:
    """ "unknown GPU 'h100'; did you mean 'h100-sxm'? catalog has ...", the guess where a
    name is close (`closest_name`, or the start of one name only)."""
    starts = [k for k in known if k.startswith(name)]
    close = starts[0] if len(starts) == 1 else closest_name(name, known)
    guess = f"; did you mean {close!r}?" if close else ""
    return f"unknown {kind} {name!r}{guess} (catalog has {', '.join(known)})"
