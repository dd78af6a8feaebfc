"""Hugging Face config.json -> `LlmSpec`, for the model families fleetplan's physics knows.

Each family maps its config keys onto the Llama-family block of `models.physics.llm`:

- `llama`, `qwen2`, `qwen3`: dense GQA; Qwen2 always has q/k/v biases, Llama and Qwen3
  when `attention_bias` is true.
- `mixtral`: every layer MoE, `num_local_experts` experts of `intermediate_size`.
- `qwen3_moe`: `num_experts` of `moe_intermediate_size`, no shared expert; every
  `decoder_sparse_step`-th layer MoE; leading `mlp_only_layers` dense.
- `deepseek_v3`: MLA attention; `first_k_dense_replace` dense layers, then MoE with
  `n_shared_experts`; the multi-token-prediction module is not counted.
- `gpt_oss`: experts of `intermediate_size`, q/k/v biases, `layer_types` sliding
  windows (absent: transformers' default, `"sliding_attention" if bool((i + 1) % 2)
  else "full_attention"`, transformers/models/gpt_oss/configuration_gpt_oss.py: layers
  0, 2, 4, ... slide), MXFP4 experts when `quantization_config.quant_method` is `mxfp4`.
- `llama4` (the `text_config` inside; `llama4_text` on its own): routed experts and one
  shared expert of `intermediate_size`, dense layers of `intermediate_size_mlp`, every
  `interleave_moe_layer_step`-th layer MoE, chunked attention over
  `attention_chunk_size` on all but every `no_rope_layer_interval`-th layer.
- `kimi_k2` (and `kimi_k25`, its `text_config` when nested): the `deepseek_v3` block.
- `minimax_m2`: GQA in every layer (an `attn_type_list` entry 0, MiniMax-01's lightning
  attention, is refused), `num_local_experts` experts of `intermediate_size`, no shared
  expert (a nonzero `shared_intermediate_size` is refused).
- `qwen3_5_moe` (the `text_config` inside; `qwen3_5_moe_text` and `qwen3_next` on their
  own): hybrid layers, `layer_types` entries `linear_attention` (Gated DeltaNet) and
  `full_attention` (gated when `attn_output_gate`), `num_experts` of
  `moe_intermediate_size` plus one shared expert of the same width. The linear layers'
  recurrent and convolution state per sequence is entered as a window of the tokens
  whose KV it equals: (value_heads x key_dim x value_dim + conv_dim x (kernel - 1)) //
  (2 x kv_heads x head_dim).

A config.json carries no published parameter count: the count computed from the
shapes stands in for it, and its source says so.
"""

from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.io.documents import read_document
from models.physics.llm import Attention, LlmSpec
from models.physics.precision import Precision
from models.schema import catalog_limits
from models.schema.errors import InputError


class HfConfigError(ValueError):
    """A config.json fleetplan cannot read: unknown family, missing or malformed field."""


Fields = dict[str, Any]


class _Read(int):
    """An integer read from config.json that remembers its key, so that a shape the model
    refuses is named as the file names it (`num_key_value_heads`, not the model's
    `kv_heads`); the model keeps a plain int."""

    key: str

    def __new__(cls, value: int, key: str) -> "_Read":
        read = super().__new__(cls, value)
        read.key = key
        return read


class _Config:
    """Typed reads of one config mapping, each naming the missing field on failure."""

    def __init__(self, data: Mapping[str, Any], family: str, prefix: str = "") -> None:
        self.data, self.family, self.prefix = data, family, prefix

    def _where(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def integer(
        self, key: str, default: int | None = None, least: int | None = None, most: int = 0
    ) -> int:
        """The integer at `key`; with `least` (a divisor, a count to iterate over) also at
        least `least` and, with `most`, at most `most`: checked here, since the value is
        used before `LlmSpec` checks the shapes (`hidden // 0` raised ZeroDivisionError,
        a layer count of 10^12 built a list of 10^12 layer types)."""
        value = self.data.get(key, default)
        if value is None:
            raise HfConfigError(
                f"config.json field {self._where(key)!r} is missing "
                f"(needed for model_type {self.family!r})"
            )
        if isinstance(value, bool) or not isinstance(value, int):
            raise HfConfigError(
                f"config.json field {self._where(key)!r} must be an integer, got {value!r}"
            )
        if least is not None and value < least:
            raise HfConfigError(
                f"config.json field {self._where(key)!r} must be at least {least}, got {value:,}"
            )
        if most and value > most:
            raise HfConfigError(
                f"config.json field {self._where(key)!r} must be at most {most:,}, got {value:,}"
            )
        return _Read(value, self._where(key))

    def items(self, key: str, layers: int | None = None) -> list[Any]:
        """The list at `key` ([] when absent) of numbers or strings; with `layers`, one
        entry per layer. Anything else is refused: an integer or a list of mappings was
        iterated (TypeError, exit 70), and 12 layer types for 48 layers were read as 12."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(item, str | int | float) for item in value
        ):
            raise HfConfigError(
                f"config.json field {self._where(key)!r} must be a list of numbers or names, "
                f"got {str(value)[:60]}"
            )
        if layers is not None and value and len(value) != layers:
            raise HfConfigError(
                f"config.json field {self._where(key)!r} has {len(value):,} entries, one per "
                f"layer; num_hidden_layers is {layers:,}"
            )
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise HfConfigError(
                f"config.json field {self._where(key)!r} must be true or false, got {value!r}"
            )
        return value


def _gqa(c: _Config) -> Fields:
    """The fields every GQA family shares."""
    heads = c.integer("num_attention_heads", least=1)
    hidden = c.integer("hidden_size")
    head_dim = c.data.get("head_dim")
    return {
        "layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        "intermediate_size": c.integer("intermediate_size"),
        "attention_heads": heads,
        "kv_heads": c.integer("num_key_value_heads", heads),
        "head_dim": c.integer("head_dim") if head_dim is not None else hidden // heads,
        "vocab_size": c.integer("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "max_context_tokens": c.integer("max_position_embeddings"),
        "attention": Attention.GQA,
    }


def _llama(c: _Config) -> Fields:
    return {**_gqa(c), "qkv_bias": c.flag("attention_bias", False)}


def _qwen2(c: _Config) -> Fields:
    return {**_gqa(c), "qkv_bias": True}


def _mixtral(c: _Config) -> Fields:
    fields = _gqa(c)
    return {
        **fields,
        "experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "moe_intermediate_size": fields["intermediate_size"],
    }


def _qwen3_moe(c: _Config) -> Fields:
    dense = c.items("mlp_only_layers")
    if list(dense) != list(range(len(dense))):
        raise HfConfigError(
            f"config.json field 'mlp_only_layers' = {dense!r}: only leading dense layers "
            "(0, 1, ..., k-1) are supported"
        )
    return {
        **_llama(c),
        "experts": c.integer("num_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "moe_intermediate_size": c.integer("moe_intermediate_size"),
        "first_dense_layers": len(dense),
        "moe_layer_step": c.integer("decoder_sparse_step", 1),
    }


def _deepseek_v3(c: _Config) -> Fields:
    heads = c.integer("num_attention_heads")
    return {
        "layers": c.integer("num_hidden_layers"),
        "hidden_size": c.integer("hidden_size"),
        "intermediate_size": c.integer("intermediate_size"),
        "attention_heads": heads,
        "kv_heads": c.integer("num_key_value_heads", heads),
        "head_dim": c.integer("qk_nope_head_dim"),
        "vocab_size": c.integer("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "max_context_tokens": c.integer("max_position_embeddings"),
        "attention": Attention.MLA,
        "q_lora_rank": c.integer("q_lora_rank") if c.data.get("q_lora_rank") is not None else 0,
        "kv_lora_rank": c.integer("kv_lora_rank"),
        "qk_nope_head_dim": c.integer("qk_nope_head_dim"),
        "qk_rope_head_dim": c.integer("qk_rope_head_dim"),
        "v_head_dim": c.integer("v_head_dim"),
        "experts": c.integer("n_routed_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "shared_experts": c.integer("n_shared_experts", 0),
        "moe_intermediate_size": c.integer("moe_intermediate_size"),
        "first_dense_layers": c.integer("first_k_dense_replace", 0),
        "moe_layer_step": c.integer("moe_layer_freq", 1),
    }


def _gpt_oss(c: _Config) -> Fields:
    fields = _gqa(c)
    layer_types = c.items("layer_types", fields["layers"])
    if c.data.get("layer_types") is None:  # transformers: layers 0, 2, 4, ... slide
        layer_types = [
            "sliding_attention" if i % 2 == 0 else "full_attention" for i in range(fields["layers"])
        ]
    windowed = sum(1 for kind in layer_types if kind == "sliding_attention")
    quant = c.data.get("quantization_config") or {}
    mxfp4 = isinstance(quant, Mapping) and quant.get("quant_method") == "mxfp4"
    return {
        **fields,
        "qkv_bias": c.flag("attention_bias", True),
        "experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok", c.data.get("experts_per_token")),
        "moe_intermediate_size": fields["intermediate_size"],
        "expert_weight_precision": Precision.FP4 if mxfp4 else None,
        "sliding_window_tokens": c.integer("sliding_window") if windowed else 0,
        "sliding_window_layers": windowed,
    }


def _llama4_text(c: _Config) -> Fields:
    fields = _gqa(c)
    layers = fields["layers"]
    rope_layers = c.items("no_rope_layers", layers)
    if rope_layers:
        chunked = sum(1 for uses_rope in rope_layers if uses_rope)
    else:
        interval = c.integer("no_rope_layer_interval", 4, least=1)
        chunked = layers - layers // interval
    chunk = c.data.get("attention_chunk_size")
    return {
        **fields,
        "intermediate_size": c.integer("intermediate_size_mlp"),
        "experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "shared_experts": 1,
        "moe_intermediate_size": fields["intermediate_size"],
        "moe_layer_step": c.integer("interleave_moe_layer_step", 1),
        "sliding_window_tokens": c.integer("attention_chunk_size") if chunk else 0,
        "sliding_window_layers": chunked if chunk else 0,
        "window_is_chunked": bool(chunk),
    }


def _minimax_m2(c: _Config) -> Fields:
    fields = _gqa(c)
    kinds = c.items("attn_type_list", fields["layers"])
    if any(kind != 1 for kind in kinds):
        raise HfConfigError(
            "config.json field 'attn_type_list' holds linear (lightning) attention layers "
            "(0): only softmax attention (1) in every layer is supported"
        )
    if c.integer("shared_intermediate_size", 0):
        raise HfConfigError(
            "config.json field 'shared_intermediate_size' is nonzero: MiniMax shared "
            "experts are not supported"
        )
    return {
        **fields,
        "experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "moe_intermediate_size": fields["intermediate_size"],
        "qk_norm_across_heads": c.flag("use_qk_norm", False)
        and c.data.get("qk_norm_type", "per_layer") == "per_layer",
    }


def _qwen3_hybrid(c: _Config) -> Fields:
    layer_types = c.items("layer_types", c.integer("num_hidden_layers", least=1)) or None
    if layer_types is None and "full_attention_interval" in c.data:  # transformers' default
        interval = c.integer("full_attention_interval", least=1)
        layers = c.integer("num_hidden_layers", least=1, most=int(catalog_limits.LAYERS.high))
        full = {i for i in range(layers) if (i + 1) % interval == 0}
        layer_types = ["full_attention" if i in full else "linear_attention" for i in range(layers)]
    if not isinstance(layer_types, list) or not layer_types:
        raise HfConfigError(
            f"config.json field {c._where('layer_types')!r} is missing "
            f"(needed for model_type {c.family!r})"
        )
    unknown = set(layer_types) - {"linear_attention", "full_attention"}
    if unknown:
        raise HfConfigError(
            f"config.json field {c._where('layer_types')!r} holds {sorted(unknown)!r}: "
            "only 'linear_attention' and 'full_attention' are supported"
        )
    moe_width = c.integer("moe_intermediate_size")
    shared = c.integer("shared_expert_intermediate_size", 0)
    if shared not in (0, moe_width):
        raise HfConfigError(
            f"config.json field {c._where('shared_expert_intermediate_size')!r} = {shared}: "
            f"only a shared expert of the routed width ({moe_width}) is supported"
        )
    if c.data.get("mlp_only_layers"):
        raise HfConfigError(
            f"config.json field {c._where('mlp_only_layers')!r}: dense layers of a hybrid "
            "model are not supported"
        )
    width = c.data.get("intermediate_size") or moe_width  # no dense MLP: any positive width
    fields = _gqa(_Config({**c.data, "intermediate_size": width}, c.family, c.prefix))
    linear = sum(1 for kind in layer_types if kind == "linear_attention")
    key_heads, value_heads = c.integer("linear_num_key_heads"), c.integer("linear_num_value_heads")
    key_dim, value_dim = c.integer("linear_key_head_dim"), c.integer("linear_value_head_dim")
    kernel = c.integer("linear_conv_kernel_dim")
    state = value_heads * key_dim * value_dim
    conv_state = (2 * key_heads * key_dim + value_heads * value_dim) * (kernel - 1)
    kv_per_token = 2 * c.integer("num_key_value_heads", fields["kv_heads"], least=1)
    kv_per_token *= c.integer("head_dim", fields["head_dim"], least=1)
    return {
        **fields,
        "qkv_bias": c.flag("attention_bias", False),
        "attention_output_gate": c.flag("attn_output_gate", True),
        "experts": c.integer("num_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "shared_experts": 1 if shared else 0,
        "moe_intermediate_size": moe_width,
        "moe_layer_step": c.integer("decoder_sparse_step", 1),
        "linear_attention_layers": linear,
        "linear_key_heads": key_heads,
        "linear_value_heads": value_heads,
        "linear_key_head_dim": key_dim,
        "linear_value_head_dim": value_dim,
        "linear_conv_kernel": kernel,
        "sliding_window_tokens": (state + conv_state) // kv_per_token if linear else 0,
        "sliding_window_layers": linear,
    }


_FAMILIES: dict[str, Callable[[_Config], Fields]] = {
    "llama": _llama,
    "qwen2": _qwen2,
    "qwen3": _llama,
    "qwen3_moe": _qwen3_moe,
    "mixtral": _mixtral,
    "deepseek_v3": _deepseek_v3,
    "gpt_oss": _gpt_oss,
    "llama4": _llama4_text,
    "llama4_text": _llama4_text,
    "kimi_k2": _deepseek_v3,
    "kimi_k25": _deepseek_v3,
    "minimax_m2": _minimax_m2,
    "qwen3_5_moe": _qwen3_hybrid,
    "qwen3_5_moe_text": _qwen3_hybrid,
    "qwen3_next": _qwen3_hybrid,
}
_TEXT_CONFIG_FAMILIES = {"llama4": True, "qwen3_5_moe": True, "kimi_k25": False}
"""Multimodal families whose text model sits in `text_config`: required (True) or read
when present (False: some copies flatten it)."""
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_FAMILIES)
"""The `model_type` values fleetplan can import."""


def llm_from_hf_config(
    config: Mapping[str, Any], name: str, source: str = "config.json"
) -> LlmSpec:
    """The `LlmSpec` a parsed config.json describes.

    Args:
        config: the parsed config.json.
        name: the model's name in fleetplan.
        source: where the config came from, recorded in `sources`.

    Raises:
        HfConfigError: unknown `model_type`, or a field missing or malformed, naming it.
    """
    if not isinstance(config, Mapping):
        raise HfConfigError(f"a config.json is a JSON object, got {type(config).__name__}")
    model_type = config.get("model_type")
    family = _FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        architectures = config.get("architectures")
        raise HfConfigError(
            f"model_type {model_type!r} (architectures {architectures!r}) is not supported; "
            f"supported model_type values: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    data, prefix = config, ""
    if model_type in _TEXT_CONFIG_FAMILIES:
        text = config.get("text_config")
        if isinstance(text, Mapping):  # the top level may hold the embedding tie
            tie = {k: config[k] for k in ("tie_word_embeddings",) if k in config}
            data, prefix = {**tie, **text}, "text_config."
        elif _TEXT_CONFIG_FAMILIES[model_type]:
            raise HfConfigError(
                f"config.json field 'text_config' is missing (model_type {model_type!r})"
            )
    fields = family(_Config(data, model_type, prefix))
    display = config.get("_name_or_path") or name
    try:
        shaped = LlmSpec(name=name, published_params_b=1.0, published_active_params_b=1.0, **fields)
        total_b, active_b = shaped.total_params() / 1e9, shaped.active_params() / 1e9
        return shaped.model_copy(
            update={
                "display_name": str(display),
                "published_params_b": round(total_b, 3),
                "published_active_params_b": round(active_b, 3),
                "sources": {
                    "architecture": f"{source} (model_type {model_type})",
                    "published_params_b": "not in config.json: computed from the shapes",
                },
            }
        )
    except ValidationError as error:
        details = "; ".join(f"{_field(e)}: {e['msg']}" for e in error.errors())
        raise HfConfigError(
            f"config.json ({model_type}) describes no valid model: {details}"
        ) from None


def _field(error: Any) -> str:
    """Where a refused shape is: the config.json key it was read from, with the model's
    field beside it (`num_key_value_heads (kv_heads)`), else the model's field."""
    field = ".".join(map(str, error["loc"]))
    key = getattr(error.get("input"), "key", None)
    return f"{key} ({field})" if key and key != field else field


def default_model_name(path: str | Path) -> str:
    """The name a config file gives its model: the folder's name for `config.json`
    (`Qwen3-32B/config.json` -> `Qwen3-32B`), else the file's stem."""
    path = Path(path)
    if path.stem == "config" and path.parent.name:
        return path.parent.name
    return path.stem


_FP8_METHODS = frozenset(("fp8", "fbgemm_fp8"))
"""`quantization_config.quant_method` values of checkpoints whose linear weights are FP8."""
_MODELOPT_ALGOS = {"FP8": Precision.FP8, "NVFP4": Precision.FP4}
"""ModelOpt checkpoints (`quant_method: modelopt`): `quant_algo` -> the weights' precision."""


def checkpoint_precision(config: Mapping) -> Precision | None:
    """The precision a config.json says its checkpoint's weights are stored in, where its
    `quantization_config` names one fleetplan models: FP8 (`quant_method` fp8 or
    fbgemm_fp8, as DeepSeek-V3 and the FP8 Llama releases ship; compressed-tensors with
    8-bit float weights; ModelOpt FP8), FP4 (ModelOpt NVFP4); None otherwise (no
    quantization_config: the weights as trained, or MXFP4 experts only, read into the
    model's `expert_weight_precision`)."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    method = quant.get("quant_method")
    if method in _FP8_METHODS:
        return Precision.FP8
    if method == "modelopt":
        return _MODELOPT_ALGOS.get(quant.get("quant_algo"))
    if method == "compressed-tensors":
        groups = quant.get("config_groups")
        weights = (
            [g.get("weights") for g in groups.values() if isinstance(g, Mapping)]
            if isinstance(groups, Mapping)
            else []
        )
        if weights and all(
            isinstance(w, Mapping) and w.get("num_bits") == 8 and w.get("type") == "float"
            for w in weights
        ):
            return Precision.FP8
    return None


def precision_in_file(path: str) -> Precision | None:
    """`checkpoint_precision` of a config.json file; None where it cannot be read (the
    reading that follows names what is wrong with it)."""
    try:
        config, _ = read_document(Path(path), what="config")
    except InputError:
        return None
    return checkpoint_precision(config) if isinstance(config, Mapping) else None


@cache
def load_hf_config(path: str, name: str | None = None) -> LlmSpec:
    """Read a config.json file into an `LlmSpec` named `name` (default: `default_model_name`).

    Raises:
        HfConfigError: the file is missing, not JSON, or not a supported config.
    """
    file = Path(path)
    try:  # the bounded reader: a FIFO, a device, a huge or non-UTF-8 file is refused
        config, _ = read_document(file, what="config")
    except InputError as error:
        raise HfConfigError("; ".join(str(issue) for issue in error.issues)) from None
    try:
        return llm_from_hf_config(config, name or default_model_name(file), source=str(path))
    except HfConfigError as error:
        raise HfConfigError(f"{path}: {error}") from None
