"""The co-location keys of the instance file: `policy.colocation` and LoRA adapters
(`base`, `rank`) in `models`."""

import pytest
import yaml

from models.io.loading import validate_instance
from models.schema.errors import InputError
from tests.paths import DEFAULT_INSTANCE


def _reference() -> dict:
    return yaml.safe_load(DEFAULT_INSTANCE.read_text())


def _problems(data: dict) -> list[str]:
    with pytest.raises(InputError) as caught:
        validate_instance(data, "x.yaml")
    return [str(issue) for issue in caught.value.issues]


def _with_models(*entries: dict) -> dict:
    data = _reference()
    data["models"] = [*data["models"], *entries]
    return data


def test_colocation_is_off_by_default_and_can_be_switched_on():
    data = _reference()
    assert validate_instance(data).policy.colocation is False
    data["policy"] = {**data.get("policy", {}), "colocation": True}
    assert validate_instance(data).policy.colocation is True


def test_an_adapter_inherits_its_base_architecture_under_its_own_name():
    base = _reference()["models"][0]["name"]
    instance = validate_instance(_with_models({"name": "support-lora", "base": base, "rank": 8}))
    adapter, parent = instance.llm_specs["support-lora"], instance.llm_specs[base]
    assert adapter.name == "support-lora"
    assert adapter.model_dump(exclude={"name", "display_name"}) == parent.model_dump(
        exclude={"name", "display_name"}
    )
    assert instance.model_entry("support-lora").is_adapter
    assert instance.model_entry("support-lora").rank == 8


def test_an_adapter_of_a_catalog_model_not_listed_resolves_from_the_catalog():
    instance = validate_instance(_with_models({"name": "tiny-lora", "base": "llama-3.1-8b"}))
    assert instance.llm_specs["tiny-lora"].hidden_size == 4096


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"name": "x-lora", "base": "no-such-model"}, "models[1].base: unknown base model"),
        ({"name": "x-lora", "base": "x-lora"}, "an adapter cannot be its own base"),
        (
            {"name": "x-lora", "base": "llama-3.1-8b", "layers": 12},
            "inherits the architecture of 'llama-3.1-8b'; remove layers",
        ),
        ({"name": "llama-3.1-8b-ft", "rank": 8}, "models[1].rank: rank is an adapter's"),
        ({"name": "x-lora", "base": "llama-3.1-8b", "rank": 0}, "models[1].rank"),
    ],
)
def test_bad_adapters_are_named(entry, expected):
    data = _with_models(entry)
    assert len(data["models"]) == 2, "the reference has one model; the index above says 1"
    assert any(expected in problem for problem in _problems(data))


def test_an_adapter_of_an_adapter_names_the_real_base():
    data = _with_models(
        {"name": "a-lora", "base": "llama-3.1-8b"}, {"name": "b-lora", "base": "a-lora"}
    )
    assert any("base 'a-lora' is itself an adapter" in p for p in _problems(data))
