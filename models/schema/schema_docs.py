"""The instance's JSON schema with a description on every field, for editors' hover help.

Every field of the instance models is documented by the string literal under it (an
attribute docstring). Pydantic can read those when each model class is built
(`use_attribute_docstrings`), but that parses the source of every model on every start of
the program: a third of a one-model solve's start-up. The descriptions are wanted in one
place only, the schema `fleetplan schema` prints, so they are read here, when the schema
is asked for: each model class's source is parsed once and the docstring under each field
becomes that field's `description` (a description the field already states wins).

Models built by `create_model` (the catalog-override entries) have no source of their
own; `DOCUMENTED_BY` names the model whose fields they copy.
"""

import ast
import inspect
import itertools
import textwrap
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel

from models.physics.efficiency import Efficiency, EfficiencyOverrides
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.schema.catalog_entries import GpuOverrides, LlmOverrides
from models.schema.instance import Instance

DOCUMENTED_BY: dict[type[BaseModel], type[BaseModel]] = {
    GpuOverrides: GpuSpec,
    LlmOverrides: LlmSpec,
    EfficiencyOverrides: Efficiency,
}
"""A model whose fields are another model's, optional: its fields' docstrings are there."""


def instance_schema() -> dict[str, Any]:
    """The JSON schema of an instance file, every field described."""
    schema = Instance.model_json_schema()
    classes = {cls.__name__: cls for cls in _models(Instance)}
    for name, definition in {"Instance": schema, **schema.get("$defs", {})}.items():
        cls = classes.get(name)
        if cls is None:
            continue
        docs = field_docs(cls)
        for field, spec in definition.get("properties", {}).items():
            if not spec.get("description") and docs.get(field):
                spec["description"] = docs[field]
    return schema


def field_docs(cls: type[BaseModel]) -> dict[str, str]:
    """Field name -> the docstring under it, over `cls` and its bases (nearest wins)."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel:
            docs.update(_own_docs(base))
            if base in DOCUMENTED_BY:
                docs.update(field_docs(DOCUMENTED_BY[base]))
    return docs


@cache
def _own_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings written in `cls`'s own class body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # built by create_model: no source
        return {}
    body = next(
        (node.body for node in ast.parse(source).body if isinstance(node, ast.ClassDef)), []
    )
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """Every model class reachable from `root`'s fields, `root` first."""
    found: list[type[BaseModel]] = []
    todo: list[Any] = [root]
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item in found:
                continue
            found.append(item)
            todo.extend(field.annotation for field in item.model_fields.values())
        else:
            todo.extend(typing.get_args(item))
    return found
