"""The prefill-only replica's lane: whole iterations, the ride and the p99 TTFT at a load
(`models.serving.prefill_model`), with hand arithmetic."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.serving.prefill_model import PrefillLane
from models.serving.queueing import pooled_wait_p99_s

TOKEN_RATE = 10_000.0
"""r: prefill tokens/s of the hand-made lane."""
BUDGET = 8_192.0
"""C: tokens per iteration."""


def lane(prompt: float = 1_500.0, scv: float = 0.0, pool: float = 1, **extra) -> PrefillLane:
    """A lane whose own prefill is exactly P / r (no fixed overhead) and no transfer."""
    fields = {
        "token_rate": TOKEN_RATE,
        "budget_tokens": BUDGET,
        "prompt_tokens": prompt,
        "prompt_scv": scv,
        "own_s": prompt / TOKEN_RATE,
        "own_p99_s": prompt / TOKEN_RATE,
        "pool_replicas": pool,
    }
    return PrefillLane(**(fields | extra))


def test_an_iteration_of_the_budget_takes_budget_over_rate():
    """8,192 tokens at 10,000 tokens/s: 0.8192 s."""
    assert lane().iteration_s(BUDGET) == pytest.approx(8_192 / 10_000)


def test_at_low_load_the_ttft_is_the_prompt_alone():
    """No load: no residual, no wait, nothing rides: TTFT = P / r = 1,500 / 10,000 s; at
    a vanishing load it tends there."""
    one = lane()
    assert one.ttft_p99_s(0.0) == pytest.approx(1_500 / 10_000)
    assert one.ttft_p99_s(1e-6) == pytest.approx(1_500 / 10_000, rel=1e-4)
    assert one.own_iterations_s(1e-6, 0.0) == pytest.approx(1_500 / 10_000)


def test_at_high_load_the_own_service_is_whole_iterations():
    """A long wait fills the prompt's last iteration with the prompts that arrived
    meanwhile: 1,500 tokens finish with a whole iteration, 8,192 / 10,000 s; 10,000
    tokens need ceil(10,000 / 8,192) = 2 iterations, 2 x 8,192 / 10,000 s; a prompt of
    exactly the budget leaves no room."""
    rate = 0.9 * TOKEN_RATE / 1_500  # rho = 0.9
    assert lane().own_iterations_s(rate, 100.0) == pytest.approx(8_192 / 10_000)
    long = lane(prompt=10_000.0)
    assert long.own_iterations_s(0.9 * TOKEN_RATE / 10_000, 100.0) == pytest.approx(
        2 * 8_192 / 10_000
    )
    assert lane(prompt=BUDGET).room_tokens() == 0.0


def test_the_ride_is_what_arrives_while_it_waits_up_to_the_room():
    """rho = 0.5 and a 0.2 s wait: 0.5 x 0.2 = 0.1 s of other prompts' tokens ride along
    (1,000 tokens, under the room 8,192 - 1,500 = 6,692)."""
    rate = 0.5 * TOKEN_RATE / 1_500
    assert lane().ride_s(rate, 0.2) == pytest.approx(0.5 * 0.2)
    assert lane().ride_s(rate, 50.0) == pytest.approx((8_192 - 1_500) / 10_000)


def test_the_p99_ttft_of_one_replica_by_hand():
    """Fixed 1,500-token prompts (cv 0) on one replica at rho = 0.6: S = 0.15 s,
    residual = rho x P / r                  = 0.6 x 0.15 = 0.09 s
    W99      = S / (2 (1 - rho)) ln(rho / 0.01)  (M/D/1 tail with P(wait) = rho)
    ride     = min(6,692 / 10,000, rho x (W99 + residual))
    TTFT99   = residual + S + W99 + ride (no p99 prompt extra: fixed lengths)."""
    service_s = 1_500 / 10_000
    rho = 0.6
    residual_s = rho * service_s
    wait_s = service_s / (2 * (1 - rho)) * math.log(rho / 0.01)
    ride_s = min(6_692 / 10_000, rho * (wait_s + residual_s))
    expected_s = residual_s + service_s + wait_s + ride_s
    assert lane().ttft_p99_s(rho / service_s) == pytest.approx(expected_s, rel=1e-9)


def test_a_long_prompt_mix_caps_the_residual_at_one_budget():
    """The length-biased single-prompt iteration P (1 + cv^2) = 6,000 x 2 = 12,000
    tokens exceeds the budget: the residual is rho x 8,192 / r."""
    wide = lane(prompt=6_000.0, scv=1.0)
    rate = 0.5 * TOKEN_RATE / 6_000
    assert wide.residual_s(rate) == pytest.approx(0.5 * 8_192 / 10_000)


def test_saturation_has_no_finite_ttft():
    assert math.isinf(lane().ttft_p99_s(TOKEN_RATE / 1_500))


@given(
    rho=st.floats(0.0, 0.98),
    more=st.floats(0.0, 0.5),
    prompt=st.floats(100.0, 30_000.0),
    scv=st.floats(0.0, 3.0),
    pool=st.sampled_from([1, 2, 8, 64, math.inf]),
)
def test_ttft_grows_with_load_and_never_falls_below_the_queue_alone(rho, more, prompt, scv, pool):
    """Monotone in the rate (the capacity bisection relies on it), and never below the
    old prompt-alone model S(P) + sqrt(W99^2 + extra^2)."""
    one = lane(prompt=prompt, scv=scv, pool=pool, own_p99_s=3 * prompt / TOKEN_RATE)
    service_s = prompt / TOKEN_RATE
    low = rho / service_s
    high = min(rho + more, 0.99) / service_s
    assert one.ttft_p99_s(low) <= one.ttft_p99_s(high) * (1 + 1e-12)
    wait_s = pooled_wait_p99_s(low, service_s, scv, pool)
    alone_s = service_s + math.hypot(wait_s, 2 * service_s)
    assert one.ttft_p99_s(low) >= alone_s * (1 - 1e-12)


def test_pipeline_stages_are_lanes_of_one_chunk_each():
    """pp = 2: two lanes per replica, each at r / 2 = 5,000 tokens/s, so a lane iteration
    of 8,192 tokens takes 8,192 / 5,000 s; a pool of 3 replicas waits as M/G/6 fed
    rate / 2 per lane with service 2 x 1,500 / 10,000 s."""
    staged = lane(pool=3, lanes=2)
    assert staged.iteration_s(BUDGET) == pytest.approx(8_192 / 5_000)
    rate = 4.0
    expected = pooled_wait_p99_s(rate / 2, 2 * 1_500 / 10_000, 0.0, 6)
    assert staged.wait_p99_s(rate) == pytest.approx(expected)
    assert staged.utilisation(rate) == pytest.approx(rate * 1_500 / 10_000)
