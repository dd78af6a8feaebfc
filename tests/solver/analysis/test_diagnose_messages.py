"""A pre-solve diagnosis reads as a sentence with the cause in it: no empty value ('at most
nothing requests/s'), no region named as nearest that cannot serve, no 'no configuration runs
on it (configurations exist on it)'."""

import pytest

from solver.errors import Infeasible
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic


def _problems(instance) -> list:
    with pytest.raises(Infeasible) as ended:
        solve(instance, SolveSettings.of(instance, threads=1))
    assert ended.value.diagnosis.method == "pre-solve check"
    return list(ended.value.diagnosis.problems)


def test_a_region_with_no_whole_server_says_why_it_serves_nothing():
    # buy_unit node: 4 H100s on offer hold no whole 8-GPU server, so east serves 0 requests/s
    # (it read "at most nothing requests/s per region")
    instance = synthetic.instance(
        {"east": {"h100-sxm": (4, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0})],
        policy={"buy_unit": "node"},
    )
    (problem,) = _problems(instance)
    assert problem.requirement == "capacity[none,chat]"
    assert "nothing" not in problem.message
    assert problem.message.endswith(
        "(at most 0 requests/s in every region: east: h100-sxm max_gpus 4 holds no whole "
        "server of 8 GPUs (policy.buy_unit: node) and none owned)"
    )


def test_a_region_within_reach_that_offers_nothing_is_not_called_the_nearest():
    # losing east, its users may go to west (50 ms, within 80 ms), but west offers no GPU:
    # it read "have no region to go to within 80 ms (nearest: west at 50 ms)"
    instance = synthetic.instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {}},
        [synthetic.workload("chat", {"east": 10.0}, max_failover_rtt_ms=80)],
        links=[("east", "west", 50)],
        survive="region",
    )
    (problem,) = _problems(instance)
    assert problem.requirement == "demand[lose=east,chat,east]"
    assert problem.message == (
        "lose=east: 10.0 requests/s of chat from east have no region that can serve them "
        "within 80 ms (west at 50 ms offers no GPU that runs chat)"
    )


def test_too_few_gpus_for_the_smallest_replica_is_named_with_both_counts():
    # Llama 3.3 70B with TP 2 or 4: the smallest replica holds 2 x 1 = 2 H100s; east offers
    # 1 (it read "no configuration of chat runs on it (configurations exist on h100-sxm)")
    instance = synthetic.instance(
        {"east": {"h100-sxm": (1, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0}, model="llama-3.3-70b")],
        models={"llama-3.3-70b": ["fp8"]},
        tensor_parallel=[2, 4],
    )
    (problem,) = _problems(instance)
    assert problem.requirement == "demand[none,chat,east]"
    assert problem.message.endswith(
        "east holds no replica of chat: h100-sxm has 1 GPU to place (max_gpus plus those "
        "owned), chat's smallest replica on it needs 2 GPUs"
    )
    # TP 1 is not allowed, so a smaller replica is a remedy
    assert problem.remedy == (
        "raise regions[east].supply.h100-sxm.max_gpus to 2, allow smaller replicas "
        "(policy.tensor_parallel, policy.pipeline_parallel), or drop its demand"
    )


def test_no_gpu_offered_anywhere_is_said_so():
    # the one region's supply is empty: it read "no offered GPU supports any of ['fp8'] with
    # a TP in [1] dividing 32 heads", as if a GPU were offered
    instance = synthetic.instance(
        {"east": {}}, [synthetic.workload("chat", {"east": 10.0})], gpus=["h100-sxm"]
    )
    (problem, *_) = _problems(instance)
    assert problem.requirement == "candidates[chat]"
    assert problem.message == (
        "chat: no configuration to consider: no region offers a GPU (every supply is empty "
        "and no GPU is owned)"
    )


def test_no_gpu_for_the_precision_names_the_gpus_and_the_choices_in_words():
    # fp4 weights on an H100 (no fp4): the lists read as words, not Python's ['fp4'], [1, 2]
    instance = synthetic.instance(
        {"east": {"h100-sxm": (8, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0})],
        models={"llama-3.1-8b": ["fp4"]},
        tensor_parallel=[1, 2],
    )
    (problem, *_) = _problems(instance)
    assert problem.message == (
        "chat: no configuration to consider: no GPU offered (h100-sxm) supports fp4 with a "
        "TP of 1 or 2 that divides llama-3.1-8b's 32 attention heads"
    )


@pytest.mark.parametrize(
    ("layout", "message", "remedy"),
    [
        # llama-3.1-8b has 32 layers: PP 64 and 200 split none; it read "no GPU offered
        # (h100-sxm) supports fp8 with a TP of 1 that divides llama-3.1-8b's 32 attention
        # heads", which TP 1 does
        (
            {"pipeline_parallel": [64, 200]},
            "a PP of 64 or 200 is more pipeline stages than llama-3.1-8b's 32 layers",
            "allow a policy.pipeline_parallel of at most 32",
        ),
        # 16 and 32 divide the 32 heads, but an H100 server holds 8 GPUs
        (
            {"tensor_parallel": [16, 32]},
            "a TP of 16 or 32 is more GPUs than a server of the GPUs offered holds (at most 8)",
            "allow a policy.tensor_parallel of at most 8, or use policy.pipeline_parallel",
        ),
    ],
    ids=["pp-beyond-layers", "tp-beyond-server"],
)
def test_no_layout_names_the_filter_that_left_none(layout, message, remedy):
    instance = synthetic.instance(
        {"east": {"h100-sxm": (8, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0})],
        models={"llama-3.1-8b": ["fp8"]},
        **layout,
    )
    (problem, *_) = _problems(instance)
    assert problem.message == f"chat: no configuration to consider: {message}"
    assert problem.remedy == remedy


def test_a_context_names_the_model_not_a_bare_size_after_a():
    # it read "on a 8.03B model"
    instance = synthetic.instance(
        {"east": {"h100-sxm": (8, 2.0)}},
        [synthetic.workload("chat", {"east": 10.0}, ttft_p99_ms=5)],
    )
    (problem, *_) = _problems(instance)
    assert "outputs on llama-3.1-8b (8.03B parameters)" in problem.message
