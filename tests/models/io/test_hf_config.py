"""Hugging Face config.json import: every family against the catalog, errors, wiring."""

import json
from pathlib import Path

import pytest
import yaml

from cli.exit_codes import ExitCode
from models.io.hf_config import (
    SUPPORTED_MODEL_TYPES,
    HfConfigError,
    default_model_name,
    llm_from_hf_config,
    load_hf_config,
)
from models.io.loading import load_instance
from models.physics.catalog import llm_catalog
from models.schema.errors import InputError
from tests.paths import DEFAULT_INSTANCE, REPO

FIXTURES = REPO / "tests" / "fixtures" / "hf_configs"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
FAMILIES = {
    "llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3", "gpt_oss", "llama4",
    "kimi_k25", "minimax_m2", "qwen3_5_moe",
}  # fmt: skip


def _config(stem: str) -> dict:
    return json.loads((FIXTURES / f"{stem}.json").read_text())


def test_there_is_a_fixture_for_every_supported_family():
    families = {json.loads(path.read_text())["model_type"] for path in FIXTURE_FILES}
    assert families == FAMILIES
    assert set(SUPPORTED_MODEL_TYPES) >= FAMILIES


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda path: path.stem)
def test_each_config_gives_the_catalog_parameter_count_within_one_percent(path):
    imported = load_hf_config(str(path))
    catalogued = llm_catalog()[path.stem]
    assert imported.name == path.stem
    assert imported.total_params() == pytest.approx(catalogued.total_params(), rel=0.01)
    assert imported.active_params() == pytest.approx(catalogued.active_params(), rel=0.01)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda path: path.stem)
def test_each_config_gives_the_catalog_shapes_field_by_field(path):
    # Stronger than the count: the import reads every shape the catalog holds.
    not_shapes = {"display_name", "sources", "published_params_b", "published_active_params_b"}
    imported = load_hf_config(str(path)).model_dump(exclude=not_shapes)
    assert imported == llm_catalog()[path.stem].model_dump(exclude=not_shapes)


def test_without_a_published_count_the_computed_one_stands_in_and_says_so():
    spec = load_hf_config(str(FIXTURES / "qwen3-32b.json"))
    assert spec.published_params_b == round(spec.total_params() / 1e9, 3)
    assert "computed" in spec.sources["published_params_b"]


def test_llama4_reads_the_nested_text_config():
    # Scout: 48 layers of 16 routed + 1 shared expert of 8192; 48 - 48 // 4 chunked layers
    spec = llm_from_hf_config(_config("llama-4-scout"), "scout")
    assert (spec.experts, spec.shared_experts, spec.moe_intermediate_size) == (16, 1, 8192)
    assert (spec.moe_layers, spec.sliding_window_layers) == (48, 48 - 48 // 4)
    assert spec.sliding_window_tokens == 8192 and spec.window_is_chunked


def test_kimi_k2_reads_as_deepseek_v3_flat_or_nested():
    flat = _config("kimi-k2.5")
    k2 = llm_from_hf_config({**flat, "model_type": "kimi_k2"}, "k2")
    assert (k2.experts, k2.first_dense_layers, k2.attention) == (384, 1, "mla")
    nested = {"model_type": "kimi_k25", "text_config": {**flat, "model_type": "kimi_k2"}}
    not_shapes = {"display_name", "sources"}
    assert llm_from_hf_config(nested, "k2").model_dump(exclude=not_shapes) == (
        k2.model_dump(exclude=not_shapes)
    )


def test_minimax_m2_refuses_lightning_attention_and_shared_experts():
    config = _config("minimax-m2.5")
    spec = llm_from_hf_config({**config, "attn_type_list": [1] * 62}, "m2")
    assert (spec.experts, spec.moe_intermediate_size, spec.shared_experts) == (256, 1536, 0)
    with pytest.raises(HfConfigError, match="attn_type_list"):
        llm_from_hf_config({**config, "attn_type_list": [0, 1] * 31}, "m1")
    with pytest.raises(HfConfigError, match="shared_intermediate_size"):
        llm_from_hf_config({**config, "shared_intermediate_size": 512}, "m2")


def test_qwen35_reads_the_hybrid_layers_and_the_state_window():
    spec = llm_from_hf_config(_config("qwen3.5-397b-a17b"), "q35")
    assert (spec.linear_attention_layers, spec.full_attention_layers) == (45, 15)
    assert spec.attention_output_gate and spec.shared_experts == 1
    # (64 x 128 x 128 state + (2 x 16 x 128 + 64 x 128) x 3 conv) // (2 x 2 x 256)
    assert spec.sliding_window_tokens == (64 * 128 * 128 + 12288 * 3) // 1024 == 1060
    text = _config("qwen3.5-397b-a17b")["text_config"]
    wider_shared = {**text, "shared_expert_intermediate_size": 2048}
    wider = {"model_type": "qwen3_5_moe", "text_config": wider_shared}
    with pytest.raises(HfConfigError, match="shared_expert_intermediate_size"):
        llm_from_hf_config(wider, "q35")
    by_interval = {k: v for k, v in text.items() if k != "layer_types"}  # every 4th full
    from_interval = llm_from_hf_config({"model_type": "qwen3_5_moe_text", **by_interval}, "q35")
    assert from_interval.model_dump(exclude={"sources"}) == spec.model_dump(exclude={"sources"})
    odd = {"model_type": "qwen3_5_moe", "text_config": {**text, "layer_types": ["mamba"] * 60}}
    with pytest.raises(HfConfigError, match="layer_types"):
        llm_from_hf_config(odd, "q35")
    with pytest.raises(HfConfigError, match="text_config"):
        llm_from_hf_config({"model_type": "qwen3_5_moe"}, "q35")


def test_gpt_oss_reads_windows_and_mxfp4_experts():
    spec = llm_from_hf_config(_config("gpt-oss-20b"), "oss")
    assert (spec.sliding_window_tokens, spec.sliding_window_layers) == (128, 24 // 2)
    assert spec.expert_weight_precision == "fp4"
    unquantised = {k: v for k, v in _config("gpt-oss-20b").items() if k != "quantization_config"}
    assert llm_from_hf_config(unquantised, "oss").expert_weight_precision is None


def test_gpt_oss_without_layer_types_slides_every_other_layer_as_transformers_does():
    """transformers' GptOssConfig fills an absent `layer_types` with "sliding_attention"
    at even layers: 36 layers -> 18 windowed (0, 2, ..., 34), the published 120B's own
    list; an explicit list (here every layer full) is read as written."""
    published = _config("gpt-oss-120b")
    without = {k: v for k, v in published.items() if k != "layer_types"}
    read = llm_from_hf_config(without, "oss")
    assert (read.sliding_window_tokens, read.sliding_window_layers) == (128, 36 // 2)
    assert read == llm_from_hf_config(published, "oss")
    full = {**published, "layer_types": ["full_attention"] * 36}
    assert llm_from_hf_config(full, "oss").sliding_window_layers == 0


def test_unknown_architecture_names_it_and_the_supported_list():
    config = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_size": 3072}
    with pytest.raises(HfConfigError) as caught:
        llm_from_hf_config(config, "phi")
    message = str(caught.value)
    assert "'phi3'" in message and "Phi3ForCausalLM" in message
    assert all(family in message for family in FAMILIES)


@pytest.mark.parametrize(
    ("stem", "drop", "named"),
    [
        ("llama-3.1-8b", "num_hidden_layers", "'num_hidden_layers'"),
        ("deepseek-r1", "kv_lora_rank", "'kv_lora_rank'"),
        ("qwen3-30b-a3b", "moe_intermediate_size", "'moe_intermediate_size'"),
        ("llama-4-maverick", "intermediate_size_mlp", "'text_config.intermediate_size_mlp'"),
    ],
)
def test_a_missing_field_is_named(stem, drop, named):
    config = _config(stem)
    section = config.get("text_config", config)
    del section[drop]
    with pytest.raises(HfConfigError, match=named):
        llm_from_hf_config(config, stem)


def test_a_malformed_field_is_named():
    config = _config("qwen3-32b") | {"num_hidden_layers": "sixty-four"}
    with pytest.raises(HfConfigError, match="'num_hidden_layers' must be an integer"):
        llm_from_hf_config(config, "q")


def test_interleaved_dense_layers_qwen3_moe_cannot_express_are_refused():
    config = _config("qwen3-30b-a3b") | {"mlp_only_layers": [3, 7]}
    with pytest.raises(HfConfigError, match="mlp_only_layers"):
        llm_from_hf_config(config, "q")


def test_leading_dense_layers_of_qwen3_moe_are_read():
    config = _config("qwen3-30b-a3b") | {"mlp_only_layers": [0, 1]}
    spec = llm_from_hf_config(config, "q")
    assert (spec.first_dense_layers, spec.moe_layers) == (2, 48 - 2)


def test_default_names_come_from_the_folder_or_the_file():
    assert default_model_name("models/Qwen3-32B/config.json") == "Qwen3-32B"
    assert default_model_name("configs/qwen3-32b.json") == "qwen3-32b"


def test_missing_file_and_bad_json_are_reported(tmp_path):
    with pytest.raises(HfConfigError, match="no such file"):
        load_hf_config(str(tmp_path / "absent.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"model_type": "llama",\n')
    with pytest.raises(HfConfigError, match="JSON syntax"):
        load_hf_config(str(broken))


# --- wiring: instances and perf ---------------------------------------------------------


def _instance_with_config(tmp_path: Path, entry: dict, model_name: str) -> Path:
    data = yaml.safe_load(DEFAULT_INSTANCE.read_text())
    data["models"] = [entry]
    data["workloads"] = [data["workloads"][0] | {"model": model_name}]
    folder = tmp_path / "Qwen3-30B-A3B"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text((FIXTURES / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_instance_model_from_a_config_path_relative_to_the_instance(tmp_path, monkeypatch):
    path = _instance_with_config(
        tmp_path, {"config": "Qwen3-30B-A3B/config.json"}, model_name="Qwen3-30B-A3B"
    )
    monkeypatch.chdir(REPO)  # the path resolves against the instance file, not here
    instance = load_instance(path)
    spec = instance.llm_specs["Qwen3-30B-A3B"]
    assert spec.total_params() == llm_catalog()["qwen3-30b-a3b"].total_params()


def test_instance_config_entries_take_a_name_and_overrides(tmp_path):
    entry = {"name": "a3b", "config": "Qwen3-30B-A3B/config.json", "max_context_tokens": 32768}
    instance = load_instance(_instance_with_config(tmp_path, entry, model_name="a3b"))
    assert instance.llm_specs["a3b"].max_context_tokens == 32768
    assert instance.llm_specs["a3b"].experts == 128


def test_instance_with_an_unsupported_config_names_the_field(tmp_path):
    path = _instance_with_config(tmp_path, {"config": "phi/config.json"}, model_name="phi")
    (tmp_path / "phi").mkdir()
    (tmp_path / "phi" / "config.json").write_text('{"model_type": "phi3"}')
    with pytest.raises(InputError) as caught:
        load_instance(path)
    (issue,) = caught.value.issues
    assert issue.path == "models[0].config" and "'phi3'" in issue.message


def test_validate_exits_2_on_an_unsupported_config(tmp_path, run_cli):
    path = _instance_with_config(tmp_path, {"config": "absent/config.json"}, model_name="absent")
    result = run_cli("validate", path)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "no such file" in result.stdout + result.stderr


PERF = ["--gpu", "h100-sxm", "-i", "2000", "-o", "500", "--precision", "fp8", "--json"]


def test_perf_model_config_matches_the_catalog_model(run_cli):
    by_name = run_cli("perf", "--model", "qwen3-32b", *PERF)
    by_config = run_cli("perf", "--model-config", FIXTURES / "qwen3-32b.json", *PERF)
    assert by_name.exit_code == by_config.exit_code == ExitCode.OK, by_config.stderr
    named, configured = json.loads(by_name.stdout), json.loads(by_config.stdout)
    assert configured == named


def _stored_as(tmp_path, quantization: dict | None):
    config = json.loads((FIXTURES / "qwen3-32b.json").read_text())
    if quantization is not None:
        config["quantization_config"] = quantization
    path = tmp_path / "Qwen3-32B-FP8" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(config))
    return path


def test_perf_reads_an_fp8_checkpoint_at_fp8(run_cli, tmp_path):
    """Qwen3-32B-FP8's config.json states `quant_method: fp8`: without --precision it was
    modelled at bf16 (64 GB of weights on an 80 GB H100 where the checkpoint holds 32 GB),
    silently. Now the checkpoint's precision is the default, said on stderr, and the
    figures are those of --precision fp8; --precision still chooses."""
    flags = ["--gpu", "h100-sxm", "-i", "2000", "-o", "500", "--json"]
    path = _stored_as(tmp_path, {"quant_method": "fp8", "weight_block_size": [128, 128]})
    stored = run_cli("perf", "--model-config", path, *flags)
    asked = run_cli("perf", "--model-config", path, *flags, "--precision", "fp8")
    chosen = run_cli("perf", "--model-config", path, *flags, "--precision", "bf16")
    plain = run_cli("perf", "--model-config", _stored_as(tmp_path, None), *flags)
    assert stored.exit_code == asked.exit_code == chosen.exit_code == plain.exit_code == 0
    assert "weights at fp8" in stored.stderr and "quantization_config" in stored.stderr
    assert json.loads(stored.stdout) == json.loads(asked.stdout)
    assert json.loads(chosen.stdout) == json.loads(plain.stdout)  # bf16: as before
    assert json.loads(stored.stdout) != json.loads(plain.stdout)
    assert "weights at" not in asked.stderr + plain.stderr


@pytest.mark.parametrize(
    ("quantization", "precision"),
    [
        ({"quant_method": "fp8"}, "fp8"),
        ({"quant_method": "fbgemm_fp8"}, "fp8"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}},
            },
            None,  # int4 weights: not a precision fleetplan models
        ),
        ({"quant_method": "mxfp4"}, None),  # experts only: the model's expert precision
        ({"quant_method": "awq", "bits": 4}, None),
        ("fp8", None),  # not a mapping
    ],
)
def test_checkpoint_precision_reads_the_quantization_config(quantization, precision):
    from models.io.hf_config import checkpoint_precision

    found = checkpoint_precision({"quantization_config": quantization})
    assert (None if found is None else str(found)) == precision


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "either --model NAME or --model-config FILE"),
        (["--model", "qwen3-32b", "--model-config", "x.json"], "either --model NAME"),
        (["--model-config", "absent.json"], "no such file"),
    ],
)
def test_perf_model_flags_exit_2(run_cli, flags, message):
    result = run_cli("perf", *flags, *PERF)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.stdout + result.stderr


def test_perf_unknown_architecture_exits_2_naming_it(run_cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "phi3", "architectures": ["Phi3ForCausalLM"]}')
    result = run_cli("perf", "--model-config", path, *PERF)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "'phi3'" in result.stderr and "gpt_oss" in result.stderr


def test_a_fifo_or_binary_config_is_refused_without_blocking(tmp_path, run_cli):
    """The config path goes through the bounded reader: a FIFO is refused before it is
    opened (reading it would block forever), and bytes that are not UTF-8 are named."""
    import os

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    flags = ("--gpu", "h100-sxm", "-i", "1000", "-o", "200")
    result = run_cli("perf", "--model-config", str(fifo), *flags)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "FIFO" in result.stderr
    binary = tmp_path / "binary" / "config.json"
    binary.parent.mkdir()
    binary.write_bytes(b"\xff\xfe\x00junk")
    result = run_cli("perf", "--model-config", str(binary), *flags)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert str(binary) in result.stderr
