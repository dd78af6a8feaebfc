"""The catalog entries of an instance file (`gpus[]`, `models[]`) and their resolution:
a catalog name, optionally with fields overridden, or an inline definition, merged into
the physics' `GpuSpec` and `LlmSpec` by `resolve_gpu`, `resolve_llm` and
`resolve_adapter`."""

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationInfo, create_model, model_validator

from models.io.hf_config import default_model_name, load_hf_config
from models.physics import catalog
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision
from models.schema import limits, reading_limits
from models.schema.quantities import NUMBER_NOT_BOOLEAN, ONCE_EACH, FilePath, LoraRank, at_most
from models.schema.strict import STRICT


def _overridable(spec: type[BaseModel], entry_name: str, doc: str) -> type[BaseModel]:
    """An entry model: `name` plus every other field of `spec`, each optional.

    Nested models become partial mappings so that one sub-field can be overridden.
    """
    fields: dict[str, Any] = {
        "name": (
            str,
            Field(
                min_length=1,
                max_length=reading_limits.MAX_NAME_CHARS,
                description="Catalog name; a name the catalog lacks defines a new entry "
                "inline, with every field given.",
            ),
        )
    }
    for field_name, info in spec.model_fields.items():
        if field_name == "name":
            continue
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            # booleans refused here: after the merge they would already be 1.0 and 0.0
            annotation = dict[str, Annotated[float, NUMBER_NOT_BOOLEAN] | None]
        elif info.metadata:
            # keep the field's bounds (they live in the metadata, not the annotation)
            annotation = Annotated[(annotation, *info.metadata)]
        fields[field_name] = (annotation | None, Field(default=None, description=info.description))
    return create_model(entry_name, __config__=STRICT, __doc__=doc, **fields)


GpuOverrides = _overridable(
    GpuSpec, "GpuOverrides", "Catalog GPU fields to override (or all of them, inline)."
)
LlmOverrides = _overridable(
    LlmSpec, "LlmOverrides", "Catalog LLM fields to override (or all of them, inline)."
)


class GpuEntry(GpuOverrides):  # type: ignore[misc, valid-type]
    """A GPU type on offer: a catalog name, optionally with fields overridden.

    A name the catalog does not hold defines a new GPU inline and must give every field.
    """


class ModelEntry(LlmOverrides):  # type: ignore[misc, valid-type]
    """An LLM to serve: a catalog name, or a Hugging Face config.json, with the precisions
    to consider, optionally overridden."""

    config: FilePath | None = None
    """A Hugging Face config.json to build the model from instead of the catalog (path
    relative to the instance file); `name` then defaults to the config's folder name, or
    the file's stem when the file is not called config.json."""
    weight_precisions: Annotated[list[Precision], at_most(limits.CHOICES), ONCE_EACH] = Field(
        default=[Precision.BF16], min_length=1
    )
    """Weight precisions the planner may choose from."""
    kv_precision: Precision | None = None
    """KV-cache precision; default: the weight precision, but never below fp8."""
    base: str | None = Field(default=None, min_length=1, max_length=reading_limits.MAX_NAME_CHARS)
    """This entry is a LoRA adapter of `base` (another `models` entry or a catalog model):
    it inherits the base's architecture and may be served by the base's replicas."""
    rank: LoraRank | None = None
    """LoRA rank of an adapter (only with `base`); default
    `models.colocation.lora.DEFAULT_LORA_RANK`."""

    @property
    def is_adapter(self) -> bool:
        """Whether this entry is a LoRA adapter of another model."""
        return self.base is not None

    @model_validator(mode="before")
    @classmethod
    def _config_path_and_name(cls, data: Any, info: ValidationInfo) -> Any:
        """Resolve `config` against the instance file's folder (`instance_dir` in the
        validation context) and name the model after the file when `name` is absent."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), str):
            return data
        path = Path(data["config"])
        base = (info.context or {}).get("instance_dir")
        if base is not None and not path.is_absolute():
            path = Path(base) / path
        return {"name": default_model_name(path), **data, "config": str(path)}


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def resolve_gpu(entry: BaseModel) -> GpuSpec:
    """Catalog GPU merged with the entry's overrides, or the inline definition.

    Raises pydantic.ValidationError when an inline GPU misses a field.
    """
    overrides = entry.model_dump(exclude_none=True)
    base = catalog.gpu_catalog().get(entry.name)
    fields = _merge(base.model_dump() if base else {}, overrides)
    return GpuSpec.model_validate(fields)


def resolve_llm(entry: ModelEntry) -> LlmSpec:
    """The entry's config.json (when it names one) or catalog LLM, merged with the entry's
    overrides; or the inline definition.

    Raises:
        HfConfigError: the config.json is missing, malformed or of an unsupported family.
    """
    overrides = entry.model_dump(
        exclude_none=True, exclude={"weight_precisions", "kv_precision", "config", "base", "rank"}
    )
    if entry.config is not None:
        base = load_hf_config(entry.config, entry.name)
    else:
        base = catalog.llm_catalog().get(entry.name)
    fields = _merge(base.model_dump() if base else {}, overrides)
    return LlmSpec.model_validate(fields)


def resolve_adapter(entry: ModelEntry, base: LlmSpec) -> LlmSpec:
    """An adapter's architecture: its base's, under the adapter's name (a LoRA adapter
    changes no shape; merged into the base it is a model of the same size)."""
    return base.model_copy(update={"name": entry.name, "display_name": entry.name})
