"""SGLang's prefill-first schedule in the closed-loop replay (`prefill_first`): a prompt
that arrives while others decode runs as an iteration of its own, the decodes waiting."""

import pytest

from models.physics.efficiency import EfficiencyOverrides, efficiency_for
from models.physics.precision import Precision
from models.serving.closed_loop import replay_requests

ONE_SECOND = lambda _batch, _prompt: 1.0  # noqa: E731 - every iteration takes 1 s
# Two users, budget 8 tokens, 2 seats; requests in send order: A (4, 2), B (4, 4), then
# C (4, 2), which A's user sends when A completes.
LENGTHS = [(4, 2), (4, 4), (4, 2)]


def test_mixed_iterations_by_hand():
    # it0: A and B prefill together (8 tokens), first tokens at 1 s. it1: both decode, A
    # completes at 2 s (1 further token) and its user sends C. it2: B decodes, C's 4
    # tokens ride along (budget 8 - 1), first token at 3 s. it3: B's and C's last tokens
    # at 4 s. Every TTFT 1 s, every TPOT 1 s, 8 output tokens in 4 s.
    run = replay_requests(ONE_SECOND, 8, 2, 2, LENGTHS)
    assert run.duration_s == pytest.approx(4.0)
    assert run.ttft_mean_s == pytest.approx(1.0)
    assert run.tpot_mean_s == pytest.approx(1.0)
    assert run.output_tokens_per_s == pytest.approx(8 / 4)


def test_prefill_first_stalls_the_decodes_by_hand():
    # it0: A and B prefill (1 s). it1: decode, A completes at 2 s, C is sent. it2: C
    # prefills alone, B waits (3 s). it3: decode, C's second token: C completes at 4 s.
    # it4: decode, B's fourth token at 5 s. TTFTs 1, 1, 1 s; TPOTs A (2 - 1) / 1 = 1,
    # C (4 - 3) / 1 = 1, B (5 - 1) / 3 = 4/3: mean 10/9 s; 8 tokens in 5 s.
    run = replay_requests(ONE_SECOND, 8, 2, 2, LENGTHS, prefill_first=True)
    assert run.duration_s == pytest.approx(5.0)
    assert run.ttft_mean_s == pytest.approx(1.0)
    assert run.tpot_mean_s == pytest.approx(10 / 9)
    assert run.output_tokens_per_s == pytest.approx(8 / 5)


def test_the_median_gap_reads_the_decode_step_and_the_mean_tpot_the_stall():
    # The stalled replay above, token by token after each first token: it1 (2 s) A's and
    # B's second tokens, gaps 2 - 1 = 1 and 1; it2 is C's prefill alone; it3 (4 s) B's
    # third token, gap 4 - 2 = 2 (the prefill between), C's second, 4 - 3 = 1; it4 (5 s)
    # B's fourth, 1. Gaps 1, 1, 2, 1, 1: median 1 s, the decode step, where the mean TPOT
    # (10/9 s) carries the stall; the gaps sum to every request's completion - first token
    # (A 1 + B 4 + C 1 = 6 s).
    stalled = replay_requests(ONE_SECOND, 8, 2, 2, LENGTHS, prefill_first=True)
    assert stalled.itl_p50_s == pytest.approx(1.0)
    assert stalled.tpot_mean_s > stalled.itl_p50_s
    # a gap of 5 s whenever a prefill runs between two decode steps of 1 s: B's gap at it3
    # is 1 + 5 = 6 s, the others 1 s, and the median stays the decode step
    slow_prefill = lambda batch, _prompt: 1.0 if batch else 5.0  # noqa: E731
    run = replay_requests(slow_prefill, 8, 2, 2, LENGTHS, prefill_first=True)
    assert run.itl_p50_s == pytest.approx(1.0)
    # one request of 3 tokens alone: its two gaps are decode steps
    assert replay_requests(slow_prefill, 8, 1, 1, [(4, 3)]).itl_p50_s == pytest.approx(1.0)
    # a request of one token has no gap: the median of none is 0
    assert replay_requests(ONE_SECOND, 8, 1, 1, [(4, 1)]).itl_p50_s == 0.0


def test_without_overlap_both_schedules_agree():
    # one user: no prompt ever arrives while another request decodes
    mixed = replay_requests(ONE_SECOND, 8, 4, 1, LENGTHS)
    first = replay_requests(ONE_SECOND, 8, 4, 1, LENGTHS, prefill_first=True)
    assert first == mixed


def test_only_the_sglang_profile_prefills_first():
    for engine, expected in (("sglang-0.5", True), ("vllm-0.11", False), ("trtllm-0.20", False)):
        assert efficiency_for("h100-sxm", Precision.BF16, engine=engine).prefill_first is expected


def test_an_instance_states_the_schedule_and_a_profile_file_inherits_it(tmp_path):
    # an SGLang server run with --enable-mixed-chunk: the instance says so
    mixed = EfficiencyOverrides(prefill_first=False)
    assert efficiency_for("h100-sxm", "bf16", mixed, engine="sglang-0.5").prefill_first is False
    # a profile file (what `fleetplan calibrate` writes) holds numbers only: the schedule
    # is its fallback engine's
    for fallback, expected in (("sglang-0.5", True), ("trtllm-0.20", False)):
        path = tmp_path / f"mine-{fallback}.yaml"
        path.write_text(
            "kind: fleetplan-engine-profile\nprofile: mine\n"
            f"fallback: {fallback}\ndata: test\n"
            "by_key:\n  default: {step_overhead_s: 0.004}\n"
        )
        assert efficiency_for("h100-sxm", "bf16", engine=str(path)).prefill_first is expected
