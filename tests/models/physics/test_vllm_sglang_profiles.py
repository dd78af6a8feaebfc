"""vLLM and SGLang engine profiles in the catalog (issue 34): they load, `engine:` and
`--engine` accept them, a generation they have rows of runs on their own factors, every
other generation on the profile they fall back to, and a plan records the profile."""

import json

import pytest
import yaml

from models.io.loading import validate_instance
from models.physics.efficiency import (
    UnknownEngine,
    check_engine,
    default_engine,
    efficiency_for,
    efficiency_source,
    engine_profiles,
    engine_report,
)
from models.physics.precision import Precision
from tests.paths import ONE_MODEL_ONE_REGION

FP8 = Precision.FP8


def _profiles(engine: str) -> list[str]:
    return sorted(name for name in engine_profiles() if name.startswith(f"{engine}-"))


def _chain(name: str) -> list[str]:
    names = [name]
    while engine_profiles()[names[-1]].get("fallback"):
        names.append(engine_profiles()[names[-1]]["fallback"])
    return names


def test_vllm_and_sglang_profiles_load_and_fall_back_to_the_default() -> None:
    assert _profiles("vllm") and _profiles("sglang")
    for name in _profiles("vllm") + _profiles("sglang"):
        assert check_engine(name) == name
        assert _chain(name)[-2:] == [default_engine(), "trtllm-0.17"], name


def test_mi300x_runs_on_its_own_vllm_rows_and_borrows_under_tensorrt_llm() -> None:
    vllm = max(_profiles("vllm"))
    own = efficiency_source("mi300x", vllm)
    assert not own.borrowed and own.generation is not None
    assert efficiency_source("mi300x").borrowed  # TensorRT-LLM has no MI300X rows
    assert efficiency_for("mi300x", FP8, engine=vllm) != efficiency_for("mi300x", FP8)


def test_a_generation_without_rows_gets_the_fallback_factors() -> None:
    """No vLLM row was measured on Blackwell: a vLLM profile there is the default profile's,
    with vLLM's own settings (its memory reserve) and vLLM's two-batch overlap rule."""
    for name in _profiles("vllm"):
        settings = {**engine_profiles()[name]["settings"], "overlap_engine": "vllm"}
        fallback = efficiency_for("b200", FP8).model_copy(update=settings)
        assert efficiency_for("b200", FP8, engine=name) == fallback


def test_vllm_holds_back_a_tenth_of_memory_at_every_generation() -> None:
    """vLLM's gpu_memory_utilization 0.9 leaves 1 - 0.9 = 10% of the device unused, on the
    generations a vLLM profile has rows of and on those it borrows factors for (vllm-0.10
    on Hopper: trtllm-0.20's fractions); TensorRT-LLM keeps the 5% default (SGLang its own
    rule by device: `test_sglang_reserves_its_prefill_activations_and_graphs_by_device`)."""
    for name in _profiles("vllm"):
        for gpu in ("h100-sxm", "b200", "mi300x", "a100-80gb-sxm"):
            assert efficiency_for(gpu, Precision.BF16, engine=name).memory_reserve_fraction == 0.10
    efficiency = efficiency_for("h100-sxm", Precision.BF16, engine=default_engine())
    assert efficiency.memory_reserve_fraction == 0.05


def test_sglang_reserves_its_prefill_activations_and_graphs_by_device() -> None:
    """SGLang's launch_server keeps, of a device's MiB, 512 + 1.5 x chunk + 2 x CUDA-graph
    batch + TP / 8 x 1024 (at least 10 GiB over 60 GiB) out of weights and KV cache
    (calibration/sglang_defaults.py). By hand:
    - H100, 80 GiB = 81,920 MiB, TP1: chunk 8,192, graphs 256:
      512 + 12,288 + 512 + 128 = 13,440 MiB -> 13,440 / 81,920 = 0.1641;
    - the same at TP8: graphs 512, 1,024 for the ranks: 14,848 MiB -> 0.1812;
    - B200, 180 GiB = 184,320 MiB: chunk 16,384, graphs 512:
      512 + 24,576 + 1,024 + 128 = 26,240 MiB -> 0.1424;
    - L40S, 48 GiB = 49,152 MiB (not over 60 GiB: no floor): chunk 4,096, graphs 32:
      512 + 6,144 + 64 + 128 = 6,848 MiB -> 0.1393.
    The SGLang profiles state it for every catalog GPU at TP1, and it is what they run at."""
    from calibration.engines import engine_gpu_settings
    from calibration.sglang_defaults import sglang_defaults

    def chunk_and_reserve(hbm_gib: float, tp: int = 1) -> tuple[float, float]:
        defaults = sglang_defaults(hbm_gib, tp)
        return defaults["prefill_chunk_tokens"], defaults["memory_reserve_fraction"]

    assert chunk_and_reserve(80) == (8192, 0.1641)
    assert chunk_and_reserve(80, tp=8) == (8192, 0.1812)
    assert chunk_and_reserve(180) == (16384, 0.1424)
    assert chunk_and_reserve(48) == (4096, 0.1393)
    for name in _profiles("sglang"):
        assert engine_profiles()[name]["settings_by_gpu"] == engine_gpu_settings(name)
        efficiency = efficiency_for("h100-sxm", Precision.BF16, engine=name)
        assert efficiency.memory_reserve_fraction == 0.1641
        assert efficiency.prefill_chunk_tokens == 8192
        assert efficiency_for("b200", FP8, engine=name).prefill_chunk_tokens == 16384


def test_sglangs_reserve_takes_its_share_of_hbm_from_the_kv_cache() -> None:
    """Qwen3-32B BF16 on one H100: weights and activations are the same under both
    profiles, so SGLang's KV room is (0.1641 - 0.05) x 80 GiB = 9.13 GiB smaller than
    TensorRT-LLM's: beside 61 GiB of weights, over a third of the room a 5% reserve leaves."""
    from models.physics.catalog import gpu_catalog, llm_catalog
    from models.physics.memory import memory_budget

    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["qwen3-32b"]
    bf16 = Precision.BF16

    def room(engine: str) -> float:
        efficiency = efficiency_for(gpu, bf16, engine=engine)
        return memory_budget(gpu, llm, bf16, bf16, 1, 1, efficiency).kv_room_bytes_per_gpu

    sglang = max(_profiles("sglang"))
    assert room(default_engine()) - room(sglang) == pytest.approx((0.1641 - 0.05) * 80 * 2**30)
    assert room(sglang) < (1 - 1 / 3) * room(default_engine())


def test_vllms_reserve_takes_five_more_percent_of_hbm_from_the_kv_cache() -> None:
    """gpt-oss-120b on one H100 (80 GiB = 85.90 GB): the weights and activations are the
    same under both profiles, so vllm-0.10's KV room is 0.10 - 0.05 = 5% of HBM smaller,
    4.295 GB, than TensorRT-LLM's."""
    from models.physics.catalog import gpu_catalog, llm_catalog
    from models.physics.memory import memory_budget

    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["gpt-oss-120b"]
    bf16 = Precision.BF16

    def room(engine: str) -> float:
        efficiency = efficiency_for(gpu, bf16, engine=engine)
        return memory_budget(gpu, llm, bf16, bf16, 1, 1, efficiency).kv_room_bytes_per_gpu

    assert room(default_engine()) - room("vllm-0.10") == pytest.approx(0.05 * 80 * 2**30)


def _instance(**changes) -> dict:
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data.update(changes)
    return data


def test_an_instance_with_a_vllm_engine_solves_and_its_plan_records_it() -> None:
    from solver.solve import solve

    vllm = max(_profiles("vllm"))
    data = _instance(engine=vllm, gpus=[{"name": "mi300x"}])
    data["regions"][0]["supply"] = {"mi300x": {"max_gpus": 64, "price_per_gpu_hour": 2.0}}
    plan = solve(validate_instance(data))
    assert plan.engine == vllm and plan.borrowed_efficiency is False
    assert plan.efficiency_note.startswith(f"engine profile: {vllm}")


def test_perf_takes_an_sglang_engine(run_cli) -> None:
    sglang = max(_profiles("sglang"))
    args = ["perf", "-g", "b200", "-m", "llama-3.1-8b", "-p", "fp8", "-i", "1000", "-o", "200"]
    result = run_cli(*args, "--engine", sglang, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["engine"] == sglang


def test_a_newer_release_runs_on_its_engines_newest_profile_at_or_below_it() -> None:
    newest = max(_profiles("vllm"), key=lambda p: tuple(map(int, p.split("-")[1].split("."))))
    assert check_engine("vllm-0.99.1") == newest
    assert check_engine(newest + ".7") == newest  # a patch release of a fitted minor
    assert check_engine("trtllm-1.0") == default_engine()  # 1.0 > 0.20 > 0.17
    assert "for vllm-0.99.1" in engine_report(["mi300x"], "vllm-0.99.1")
    for unknown in ("sglang-0.0.1", "tgi-2.0", "vllm-next"):  # older than any, or no engine
        with pytest.raises(UnknownEngine):
            check_engine(unknown)


def test_the_host_costs_are_the_engines_on_a_generation_it_has_no_fit_of():
    """sglang-0.5 fits its request and step overheads on Ampere and Blackwell only and
    falls back to trtllm-0.20 (request overhead 0, TensorRT-LLM's step overhead) for
    Hopper's throughput factors; both overheads (HTTP, tokenisation and scheduling before
    the engine; its scheduler, launches and sampling each iteration) are the engine's, so
    Hopper gets the median of the profile's own fits of each: with two, their mean."""
    from models.physics.efficiency import efficiency_for, profile_of

    own = profile_of("sglang-0.5")["by_key"]
    hopper = efficiency_for("h100-sxm", "fp8", engine="sglang-0.5")
    trtllm = efficiency_for("h100-sxm", "fp8", engine="trtllm-0.20")
    for name in ("request_overhead_s", "step_overhead_s"):
        ampere, blackwell = own["ampere"][name], own["blackwell"][name]
        assert getattr(hopper, name) == pytest.approx((ampere + blackwell) / 2)
        assert getattr(efficiency_for("b200", "fp8", engine="sglang-0.5"), name) == blackwell
        assert getattr(hopper, name) != getattr(trtllm, name)
    # its throughput factors stay the fallback's
    assert hopper.decode_flops_fraction == trtllm.decode_flops_fraction
    assert hopper.hbm_fraction == trtllm.hbm_fraction
    assert trtllm.request_overhead_s == 0.0  # TensorRT-LLM's rows measure none


def test_vllm_serves_an_a100_or_a_gpu_under_70_gib_at_2048_tokens_and_256_sequences() -> None:
    """`vllm serve` picks its token budget and sequence cap by device (vllm/engine/
    arg_utils.py `_set_default_args`): 8,192 tokens on a GPU of at least 70 GiB that is not
    an A100 (with 1,024 sequences), else 2,048 tokens and 256 sequences. So the A100 80GB
    (excluded by name) and the L40S (48 < 70) run at 2,048 / 256 under every vLLM profile;
    the H100, MI300X and B200 at 8,192 / 1,024, and so does the RTX PRO 6000 (95.6 GiB): it
    borrows the L40S's factors, not its settings. TensorRT-LLM and SGLang on the A100 keep
    the class defaults (8,192 / 2,048)."""
    bf16 = Precision.BF16
    for name in _profiles("vllm"):
        for gpu in ("a100-80gb-sxm", "l40s"):
            efficiency = efficiency_for(gpu, bf16, engine=name)
            assert (efficiency.prefill_chunk_tokens, efficiency.max_batch_sequences) == (2048, 256)
        for gpu in ("h100-sxm", "mi300x", "b200", "rtx-pro-6000"):
            efficiency = efficiency_for(gpu, bf16, engine=name)
            assert (efficiency.prefill_chunk_tokens, efficiency.max_batch_sequences) == (8192, 1024)
    for name in (default_engine(), *_profiles("sglang")):
        efficiency = efficiency_for("a100-80gb-sxm", bf16, engine=name)
        assert (efficiency.prefill_chunk_tokens, efficiency.max_batch_sequences) == (8192, 2048)


def test_the_catalog_states_vllms_device_defaults_as_the_rule_gives_them() -> None:
    """Each vLLM profile's `settings_by_gpu` is `engine_gpu_settings` of the catalog: by
    hand, the catalog GPUs under 70 GiB or named A100 are a100-80gb-sxm (by name) and l40s
    (48 GiB); every other one has 80 GiB or more."""
    from calibration.engines import engine_gpu_settings

    assert sorted(engine_gpu_settings("vllm-0.11")) == ["a100-80gb-sxm", "l40s"]
    for name in _profiles("vllm"):
        assert engine_profiles()[name]["settings_by_gpu"] == engine_gpu_settings(name)


def test_vllm_on_an_a100_holds_at_most_256_sequences_where_memory_holds_thousands() -> None:
    """Llama 3.1 8B BF16 on one A100 80GB at 200 + 200 tokens: KV of 128 KiB a token
    (32 layers x 8 heads x 128 x 2 x 2 B = 131,072 B) in the ~57 GiB left beside 15 GiB of
    weights holds ~466,000 tokens, over 1,100 sequences of 400: the offline batch is vLLM's
    cap of 256, where TensorRT-LLM's cap of 2,048 leaves memory to bind."""
    from models.physics.catalog import gpu_catalog, llm_catalog
    from models.serving.capacity import replica_capacity
    from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

    bf16 = Precision.BF16
    config = ReplicaConfig(
        gpu_catalog()["a100-80gb-sxm"],
        llm_catalog()["llama-3.1-8b"],
        bf16,
        bf16,
        1,
        1,
        Role.UNIFIED,
    )
    mix = TrafficMix.fixed(200, 200)

    def capacity(engine: str):
        efficiency = efficiency_for("a100-80gb-sxm", bf16, engine=engine)
        return replica_capacity(config, mix, LatencyTargets(), efficiency)

    assert capacity(max(_profiles("vllm"))).batch == 256
    assert 1000 < capacity(default_engine()).batch < 2048


def test_an_offline_vllm_row_runs_at_the_sequence_cap_it_sets() -> None:
    """AMD's MI300X throughput rows set --max-num-seqs on the command line (the file's
    max_num_seqs: 3,200 for Llama 3.1 70B at 128/2048); the prediction reads the row at its
    own cap, not the profile's 1,024 for `vllm serve`. The cap only bounds the batch: a row
    capped at 8 sequences predicts fewer tokens/s than the same row at its own cap."""
    import dataclasses

    from calibration.engine_errors import catalog_efficiency
    from calibration.engines import load_engine_data, predict_offline

    data, _ = load_engine_data()
    row = next(
        r
        for r in data.offline
        if r.model == "llama-3.1-70b"
        and r.mix.output_mean_tokens == 2048
        and r.mix.prompt_mean_tokens == 128
    )
    assert row.max_sequences == 3200
    efficiency = catalog_efficiency(row.engine, row.gpu, row.weight_precision)
    capped = dataclasses.replace(row, max_sequences=8)
    assert predict_offline(capped, efficiency) < predict_offline(row, efficiency)
