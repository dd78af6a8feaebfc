"""Cost attribution: the prefill/decode split of a pool's time and $ per million tokens."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.schema.serving_inputs import pool_replica
from models.serving.attribution import IterationTimes, unified_iteration_times
from models.serving.replica import MixTokens, Role
from models.serving.replica_layout import replica_step_model
from solver.candidates.pools import physics_of
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic

SECONDS_PER_HOUR = 3600
HOURS_PER_MONTH = 730
RATE_RPS = 20.0
PRICE = 2.40


@pytest.fixture(scope="module")
def one_pool():
    """One region, one GPU type, one layout, unified only: the plan has one pool."""
    instance = synthetic.instance(
        {"us": {"h100-sxm": (64, PRICE)}},
        [synthetic.workload("chat", {"us": RATE_RPS})],
    )
    return instance, solve(instance, SolveSettings.of(instance, threads=1))


def test_attribution_of_one_pool_by_hand(one_pool):
    instance, plan = one_pool
    (pool,) = plan.replicas
    (row,) = plan.cost_attribution
    assert pool.role is Role.UNIFIED
    config = pool_replica(instance, pool)
    physics = physics_of(instance, "chat", config)
    steps = replica_step_model(config, physics.efficiency)
    mix = MixTokens.of(physics.mix)
    batch = physics.at(pool.count).batch
    # the three iterations of the step model at the operating batch
    prompt_tokens = batch * synthetic.PROMPT_TOKENS / synthetic.OUTPUT_TOKENS  # Q = B P / O
    prompt_context = synthetic.PROMPT_TOKENS / 2
    t_decode = steps.iteration_s(batch, mix.context)
    t_prefill = steps.iteration_s(0.0, mix.context, prompt_tokens, prompt_context)
    t_both = steps.iteration_s(batch, mix.context, prompt_tokens, prompt_context)
    prefill_share = (t_prefill + t_both - t_decode) / 2 / t_both
    assert row.prefill_share == pytest.approx(prefill_share, rel=1e-9)
    assert row.decode_share == pytest.approx(1 - prefill_share, rel=1e-9)
    # cost: GPUs x price x hours; $/Mtok: phase cost over a month of tokens at the rate
    cost = pool.gpus * PRICE * HOURS_PER_MONTH
    assert row.cost_per_month == pytest.approx(cost)
    input_mtok = RATE_RPS * synthetic.PROMPT_TOKENS * SECONDS_PER_HOUR * HOURS_PER_MONTH / 1e6
    output_mtok = RATE_RPS * synthetic.OUTPUT_TOKENS * SECONDS_PER_HOUR * HOURS_PER_MONTH / 1e6
    assert row.usd_per_million_input_tokens == pytest.approx(cost * prefill_share / input_mtok)
    assert row.usd_per_million_output_tokens == pytest.approx(
        cost * (1 - prefill_share) / output_mtok
    )
    gpu_hours = pool.gpus * HOURS_PER_MONTH
    assert row.prefill_gpu_hours_per_month == pytest.approx(gpu_hours * prefill_share)


def test_the_plan_cost_is_attributed_whole(one_pool):
    _, plan = one_pool
    assert sum(a.cost_per_month for a in plan.cost_attribution) == pytest.approx(
        sum(p.cost_per_month for p in plan.replicas)
    )


@settings(max_examples=50, deadline=None)
@given(
    decode=st.floats(1e-4, 1.0),
    prefill=st.floats(1e-4, 1.0),
    overlap=st.floats(0.0, 1.0),
)
def test_shapley_shares_sum_to_one_and_lie_in_range(decode, prefill, overlap):
    # t(PD) between max(t(P), t(D)) and t(P) + t(D): the two share the iteration
    both = max(decode, prefill) + overlap * min(decode, prefill)
    shares = IterationTimes(decode, prefill, both).shares
    assert shares.prefill + shares.decode == pytest.approx(1.0)
    assert 0.0 <= shares.prefill <= 1.0
    # the phase that takes longer alone owns at least half
    if prefill > decode:
        assert shares.prefill >= 0.5 - 1e-12


@settings(max_examples=20, deadline=None)
@given(batch=st.floats(1.0, 64.0))
def test_more_prompt_per_iteration_raises_the_prefill_share(one_pool, batch):
    instance, plan = one_pool
    config = pool_replica(instance, plan.replicas[0])
    physics = physics_of(instance, "chat", config)
    steps = replica_step_model(config, physics.efficiency)
    short = MixTokens.of(physics.mix)
    longer = MixTokens(**{**short.__dict__, "prompt": short.prompt * 2})
    assert (
        unified_iteration_times(steps, longer, batch).shares.prefill
        >= unified_iteration_times(steps, short, batch).shares.prefill
    )
