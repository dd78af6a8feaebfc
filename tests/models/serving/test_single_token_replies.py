"""A mix whose every reply is one token (a classifier, a router, a yes/no judge) has no
reply with a TPOT: the time per output token is timed over the tokens after the first,
and the simulator times replies of two tokens or more (solver.simulate.engine). The
model's p99 TPOT there was that of a one-gap reply, t(B) + 2.326 sd of one iteration,
so a TPOT target sized the pool: seed-chat-sizing with 1-token outputs (1,500-token
prompts, TTFT 800 ms, TPOT 50 ms) bought 400 H100s (50 TP8 replicas at 2.42 requests/s,
'limit tpot'), 7x its 56 for 400-token replies, and `simulate` of that plan measured no
TPOT at all ('-' beside the model's 45.4 ms)."""

import pytest

from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, Limit, TrafficMix
from tests.models.serving.test_capacity import EFF, config

ONE_TOKEN = TrafficMix.fixed(1500, 1)


def test_a_tpot_target_does_not_size_replies_of_one_token():
    """At a TPOT target of 1 ms (below any decode step: 7.8 ms at batch 1 on TP8) the
    1-token mix has the capacity it has with no TPOT target, its p99 TPOT 0."""
    with_tpot = replica_capacity(config(tp=8), ONE_TOKEN, LatencyTargets(0.8, 0.001), EFF)
    without = replica_capacity(config(tp=8), ONE_TOKEN, LatencyTargets(ttft_p99_s=0.8), EFF)
    assert with_tpot.meets_slo and with_tpot.limit is not Limit.TPOT
    assert with_tpot.requests_per_s == pytest.approx(without.requests_per_s, rel=1e-9)
    assert with_tpot.tpot_p99_s == 0.0 and with_tpot.best_tpot_s == 0.0


def test_replies_of_two_tokens_still_have_a_tpot():
    """Two tokens are one gap, one decode step at least: a 1 ms target stays out of reach,
    and the best TPOT is a decode step at batch 1 (the cutoff is one token, not two)."""
    two = replica_capacity(config(tp=8), TrafficMix.fixed(1500, 2), LatencyTargets(0.8, 0.001), EFF)
    assert not two.meets_slo and two.best_tpot_s > 0.001
