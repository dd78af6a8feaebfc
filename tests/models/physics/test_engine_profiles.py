"""Engine profiles and borrowed efficiencies (issue 12): the `engine:` key and `--engine`
flag pick a calibrated profile, an unknown one is refused naming the known ones, a GPU
with no calibration rows runs on the factors of the GPU its `efficiency_like` names, and
every report says which profile it used and which GPUs borrow."""

import json

import pytest
import yaml

from models.io.loading import validate_instance
from models.physics.catalog import gpu_catalog
from models.physics.efficiency import (
    UnknownEngine,
    borrowed_gpus,
    check_engine,
    default_engine,
    efficiency_for,
    efficiency_source,
    engine_profiles,
    engine_report,
)
from models.physics.hardware import GpuSpec
from models.physics.precision import Precision
from models.schema.errors import InputError
from tests.paths import ONE_MODEL_ONE_REGION

FIXTURE = ONE_MODEL_ONE_REGION
FP8 = Precision.FP8


def _instance_data(**changes) -> dict:
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    data.update(changes)
    return data


def _inline_b200(**extra) -> GpuSpec:
    """A GPU with exactly the catalog B200's specs under another name."""
    fields = gpu_catalog()["b200"].model_dump(exclude={"name", "efficiency_like"})
    return GpuSpec(name="my-b200", **fields, **extra)


def test_the_default_profile_is_a_known_profile_with_data() -> None:
    assert default_engine() in engine_profiles()
    assert check_engine(None) == default_engine()
    assert len(engine_profiles()) >= 2  # one per TensorRT-LLM version with data


def test_an_unknown_engine_names_the_known_profiles() -> None:
    with pytest.raises(UnknownEngine) as error:
        check_engine("tgi-9.9")  # an engine with no profile (a newer vllm-9.9 would run on vLLM's)
    for name in engine_profiles():
        assert name in str(error.value)


@pytest.mark.parametrize("engine", sorted(engine_profiles()) if engine_profiles() else [])
def test_every_profile_gives_factors_for_every_catalog_gpu(engine: str) -> None:
    """A profile with no rows of a generation falls back to an older one: no catalog GPU
    is left on the class defaults."""
    for name, gpu in gpu_catalog().items():
        for precision in (Precision.BF16, FP8, Precision.FP4):
            if gpu.supports(precision):
                efficiency = efficiency_for(gpu, precision, engine=engine)
                assert 0 < efficiency.hbm_fraction <= 1, name


def test_a_gpu_with_its_own_rows_is_not_borrowed() -> None:
    for name in ("h100-sxm", "h200", "b200", "a100-80gb-sxm", "l40s"):
        source = efficiency_source(name)
        assert not source.borrowed and source.like is None, name


def test_mi300x_borrows_a_named_gpu_and_reports_say_so() -> None:
    source = efficiency_source("mi300x")
    assert source.borrowed and source.like == gpu_catalog()["mi300x"].efficiency_like
    assert efficiency_for("mi300x", FP8) == efficiency_for(source.like, FP8)
    assert borrowed_gpus(["h100-sxm", "mi300x", "gb200"]) == ["gb200", "mi300x"]
    line = engine_report(["h100-sxm", "mi300x"])
    assert default_engine() in line and "mi300x" in line and "h100-sxm on" not in line


def test_an_inline_gpu_named_like_b200_gets_b200_factors() -> None:
    """The issue's case: an inline GPU with the B200's specs planned on other (default)
    efficiencies, silently. With `efficiency_like: b200` it gets the B200's factors, so
    its physics matches the catalog B200's; without, it runs on the pooled fit and is
    flagged."""
    named = _inline_b200(efficiency_like="b200")
    assert efficiency_for(named, Precision.FP4) == efficiency_for("b200", Precision.FP4)
    assert efficiency_source(named).borrowed
    anonymous = _inline_b200()
    source = efficiency_source(anonymous)
    assert source.borrowed and source.generation is None
    assert "pooled" in source.note


def test_an_instance_engine_must_be_a_known_profile() -> None:
    with pytest.raises(InputError) as error:
        validate_instance(_instance_data(engine="sglang-0.1"))
    text = str(error.value)
    assert "engine" in text and default_engine() in text


def test_efficiency_like_must_name_a_calibrated_gpu() -> None:
    data = _instance_data(gpus=[{"name": "h100-sxm", "efficiency_like": "mi300x"}])
    with pytest.raises(InputError) as error:
        validate_instance(data)
    assert "efficiency_like" in str(error.value) and "h100-sxm" in str(error.value)


def _older_trtllm() -> str:
    """A TensorRT-LLM profile other than the default (the vLLM and SGLang profiles fall back
    to the default one for Hopper)."""
    trtllm = (p for p in engine_profiles() if p.startswith("trtllm-"))
    return sorted(set(trtllm) - {default_engine()})[0]


def test_an_instance_engine_is_used_by_the_physics() -> None:
    older = _older_trtllm()
    instance = validate_instance(_instance_data(engine=older))
    assert instance.engine == older
    assert efficiency_for("h100-sxm", FP8, engine=older) != efficiency_for("h100-sxm", FP8)


PERF = ["perf", "-g", "mi300x", "-m", "llama-3.1-8b", "-p", "fp8", "-i", "1000", "-o", "200"]


def test_perf_json_names_the_engine_and_the_borrowing(run_cli) -> None:
    result = run_cli(*PERF, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["engine"] == default_engine() and data["borrowed_efficiency"] is True
    own = json.loads(run_cli(*PERF[:2], "h100-sxm", *PERF[3:], "--json").stdout)
    assert own["borrowed_efficiency"] is False


def test_perf_text_names_the_engine_and_an_unknown_engine_exits_2(run_cli) -> None:
    older = _older_trtllm()
    result = run_cli(*PERF, "--engine", older)
    assert result.exit_code == 0 and f"engine profile: {older}" in result.stdout
    assert "mi300x" in result.stdout
    bad = run_cli(*PERF, "--engine", "nope")
    assert bad.exit_code == 2 and "--engine" in bad.stderr and default_engine() in bad.stderr


def test_estimate_with_a_model_names_the_engine(run_cli) -> None:
    args = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "fp8"]
    data = json.loads(run_cli(*args, "--json").stdout)
    assert data["engine"] == default_engine() and data["borrowed_efficiency"] is False
    assert f"engine profile: {default_engine()}" in run_cli(*args).stdout
    assert run_cli("estimate", "--engine", default_engine()).exit_code == 2


def test_a_plan_names_its_engine_and_the_gpus_that_borrow() -> None:
    from solver.solve import solve

    own = solve(validate_instance(_instance_data()))
    assert own.engine == default_engine() and own.borrowed_efficiency is False
    assert own.efficiency_note.startswith(f"engine profile: {default_engine()}")
    data = _instance_data(gpus=[{"name": "mi300x"}])
    data["regions"][0]["supply"] = {"mi300x": {"max_gpus": 64, "price_per_gpu_hour": 2.0}}
    borrowed = solve(validate_instance(data))
    assert borrowed.borrowed_efficiency is True and "mi300x" in borrowed.efficiency_note
