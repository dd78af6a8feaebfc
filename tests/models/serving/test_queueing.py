"""Queueing formulas against hand calculations, published tables and each other."""

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.serving.headroom import ceiling, derive_headroom
from models.serving.queueing import (
    RECURSION_UP_TO,
    _erlang_b_from_terms,
    combine_wait_and_service_quantile_s,
    erlang_b,
    erlang_c,
    littles_law_in_system,
    max_utilization_for_time_in_system,
    max_utilization_for_wait,
    mg1_mean_wait_s,
    mgc_mean_wait_s,
    mm1_latency_multiplier,
    mm1_multiplier_table,
    mm1_time_in_system_quantile_s,
    mm1_time_in_system_s,
    mmc_mean_wait_s,
    pool_comparison,
    time_in_system_quantile_s,
    time_in_system_wait_budget_s,
    utilization,
    wait_quantile_s,
)


def erlang_c_by_factorials(servers: int, offered_load: float) -> float:
    """The textbook Erlang C, a^c/c! c/(c-a) over sum_{k<c} a^k/k! + that, for small c."""
    top = offered_load**servers / math.factorial(servers) * servers / (servers - offered_load)
    bottom = sum(offered_load**k / math.factorial(k) for k in range(servers))
    return top / (bottom + top)


def test_utilization_and_littles_law():
    # 12 requests/s x 0.5 s over 4 servers
    assert utilization(12, 0.5, 4) == pytest.approx(12 * 0.5 / 4)
    # 90 requests/s for 6 s each: 540 in flight
    assert littles_law_in_system(90, 6) == pytest.approx(90 * 6)


def test_erlang_b_small_cases():
    # B(1, a) = a / (1 + a); B(2, a) = (a^2/2) / (1 + a + a^2/2)
    assert erlang_b(1, 1.0) == pytest.approx(1 / (1 + 1))
    assert erlang_b(2, 1.0) == pytest.approx((1 / 2) / (1 + 1 + 1 / 2))


@pytest.mark.parametrize(
    ("servers", "offered_load", "published"),
    [
        (1, 0.5, 0.5),  # one server: the chance to wait is rho
        (2, 1.0, 1 / 3),  # two servers at one Erlang
        (3, 2.0, 4 / 9),  # (8/6 x 3) / (1 + 2 + 2 + 4)
        (10, 8.0, 0.4092),  # call-centre table: 10 agents, 8 Erlangs -> 40.9% wait
    ],
)
def test_erlang_c_against_published_values(servers, offered_load, published):
    assert erlang_c(servers, offered_load) == pytest.approx(published, abs=5e-5)
    assert erlang_c(servers, offered_load) == pytest.approx(
        erlang_c_by_factorials(servers, offered_load), rel=1e-12
    )


def test_erlang_c_two_servers_closed_form():
    # For c = 2: C = 2 rho^2 / (1 + rho)
    rho = 0.8
    assert erlang_c(2, 2 * rho) == pytest.approx(2 * rho**2 / (1 + rho))


def test_erlang_c_saturated_and_idle():
    assert erlang_c(4, 4.0) == 1.0
    assert erlang_c(4, 5.0) == 1.0
    assert erlang_c(4, 0.0) == 0.0


def test_erlang_c_thousands_of_servers_matches_log_space():
    # log-space textbook formula, independent of the recursion
    servers, load = 5000, 4900.0
    log_terms = [k * math.log(load) - math.lgamma(k + 1) for k in range(servers)]
    log_top = (
        servers * math.log(load) - math.lgamma(servers + 1) + math.log(servers / (servers - load))
    )
    peak = max([*log_terms, log_top])
    bottom = sum(math.exp(t - peak) for t in log_terms)
    top = math.exp(log_top - peak)
    assert erlang_c(servers, load) == pytest.approx(top / (bottom + top), rel=1e-9)


def test_mm1_is_mmc_with_one_server():
    rate, service_s = 7.0, 0.1
    rho = rate * service_s
    expected_wait_s = rho * service_s / (1 - rho)
    assert mmc_mean_wait_s(rate, service_s, 1) == pytest.approx(expected_wait_s)
    assert mm1_time_in_system_s(service_s, rho) == pytest.approx(expected_wait_s + service_s)


def test_mg1_with_exponential_service_is_mm1():
    rate, service_s = 3.0, 0.25
    rho = rate * service_s
    assert mg1_mean_wait_s(rate, service_s, 1.0) == pytest.approx(
        mmc_mean_wait_s(rate, service_s, 1)
    )
    assert mg1_mean_wait_s(rate, service_s, 1.0) + service_s == pytest.approx(
        mm1_time_in_system_s(service_s, rho)
    )


def test_mg1_deterministic_service_waits_half_as_long():
    # Pollaczek-Khinchine: (1 + 0) / (1 + 1) of the M/M/1 wait
    rate, service_s = 3.0, 0.25
    assert mg1_mean_wait_s(rate, service_s, 0.0) == pytest.approx(
        mg1_mean_wait_s(rate, service_s, 1.0) / 2
    )


def test_mgc_is_mmc_for_exponential_and_pk_for_one_server():
    assert mgc_mean_wait_s(30, 0.1, 1.0, 4) == pytest.approx(mmc_mean_wait_s(30, 0.1, 4))
    assert mgc_mean_wait_s(6, 0.1, 2.5, 1) == pytest.approx(mg1_mean_wait_s(6, 0.1, 2.5))
    # Allen-Cunneen factor (1 + cs^2) / 2
    assert mgc_mean_wait_s(30, 0.1, 3.0, 4) == pytest.approx(mmc_mean_wait_s(30, 0.1, 4) * 2)


def test_unstable_queues_are_infinite():
    assert mm1_time_in_system_s(1.0, 1.0) == math.inf
    assert mmc_mean_wait_s(10, 1.0, 10) == math.inf
    assert mg1_mean_wait_s(2, 0.5, 1.0) == math.inf
    assert wait_quantile_s(2, 0.5, 1.0) == math.inf


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="servers"):
        erlang_b(0, 1.0)
    with pytest.raises(ValueError, match="rate"):
        mmc_mean_wait_s(-1, 0.1, 1)
    with pytest.raises(ValueError, match="quantile"):
        wait_quantile_s(1, 0.1, 1.0, 1, quantile=1.0)
    with pytest.raises(ValueError, match="service_s"):
        max_utilization_for_wait(0.0, 1.0, 1.0)


def test_mm1_wait_quantile_is_exact():
    # M/M/1: P(Wq > t) = rho exp(-(1 - rho) t / S), so t_99 = S / (1 - rho) ln(rho / 0.01)
    service_s, rho = 0.05, 0.7
    expected_s = service_s / (1 - rho) * math.log(rho / 0.01)
    assert wait_quantile_s(rho / service_s, service_s, 1.0) == pytest.approx(expected_s)


def test_mmc_wait_quantile_is_exact():
    # M/M/c: P(Wq > t) = C exp(-(c - a) t / S)
    servers, service_s, load = 4, 0.2, 3.2
    c_wait = erlang_c_by_factorials(servers, load)
    expected_s = service_s / (servers - load) * math.log(c_wait / 0.01)
    assert wait_quantile_s(load / service_s, service_s, 1.0, servers) == pytest.approx(expected_s)


def test_wait_quantile_zero_when_few_wait():
    # one server at 0.5% load: only 0.5% wait, below the 1% tail
    assert wait_quantile_s(0.05, 0.1, 1.0) == 0.0


def test_time_in_system_quantile_close_to_exact_mm1():
    # exact M/M/1: S ln(100) / (1 - rho). With the exponential service's own p99 S ln(100)
    # in quadrature the approximation is a little high; at the mean, a little low by
    # S (1 + ln(rho) / (1 - rho)).
    service_s = 0.05
    service_p99_s = service_s * math.log(100)
    for rho in (0.5, 0.7, 0.9):
        exact_s = mm1_time_in_system_quantile_s(service_s, rho)
        assert exact_s == pytest.approx(service_s / (1 - rho) * math.log(100))
        rate = rho / service_s
        with_tail_s = time_in_system_quantile_s(
            rate, service_s, 1.0, service_quantile_s=service_p99_s
        )
        assert exact_s <= with_tail_s <= exact_s * 1.05
        at_mean_s = time_in_system_quantile_s(rate, service_s, 1.0)
        assert at_mean_s == pytest.approx(exact_s + service_s * (1 + math.log(rho) / (1 - rho)))
        assert exact_s * 0.95 <= at_mean_s <= exact_s


def test_wait_and_service_quantiles_combine_in_quadrature():
    # S + sqrt(W^2 + (S99 - S)^2): 50 + sqrt(300^2 + (450 - 50)^2) = 50 + 500 ms
    assert combine_wait_and_service_quantile_s(0.3, 0.05, 0.45) == pytest.approx(0.05 + 0.5)
    # no queue: the service's own quantile; fixed service: wait + service
    assert combine_wait_and_service_quantile_s(0.0, 0.05, 0.45) == pytest.approx(0.45)
    assert combine_wait_and_service_quantile_s(0.3, 0.05, 0.05) == pytest.approx(0.35)
    assert combine_wait_and_service_quantile_s(math.inf, 0.05, 0.45) == math.inf


def test_mm1_multiplier_table_matches_seed():
    table = dict(mm1_multiplier_table())
    for rho, multiplier in (
        (0.5, 2.0),
        (0.7, 3.3),
        (0.8, 5.0),
        (0.9, 10.0),
        (0.95, 20.0),
        (0.99, 100.0),
    ):
        assert round(table[rho], 1) == multiplier
        assert table[rho] == pytest.approx(1 / (1 - rho))
    assert mm1_latency_multiplier(0.0) == 1.0


def test_max_utilization_for_wait_inverts_the_quantile():
    service_s, scv, budget_s = 0.05, 1.0, 0.75
    rho = max_utilization_for_wait(service_s, scv, budget_s)
    assert wait_quantile_s(rho / service_s, service_s, scv) == pytest.approx(budget_s, rel=1e-6)
    assert wait_quantile_s((rho + 1e-4) / service_s, service_s, scv) > budget_s
    assert max_utilization_for_wait(service_s, scv, -0.1) == 0.0


def test_ceiling_for_time_in_system_near_exact_mm1():
    # exact M/M/1: S ln(100) / (1 - rho) <= T  ->  rho <= 1 - S ln(100) / T
    service_s, target_s = 0.05, 0.8
    exact = 1 - service_s * math.log(100) / target_s
    rho = max_utilization_for_time_in_system(
        service_s, 1.0, target_s, service_quantile_s=service_s * math.log(100)
    )
    assert rho == pytest.approx(exact, abs=0.01)
    assert rho <= exact
    # wait budget: sqrt((800 - 50)^2 - (230.3 - 50)^2) ms
    budget_s = time_in_system_wait_budget_s(service_s, target_s, service_s * math.log(100))
    assert budget_s == pytest.approx(math.sqrt(0.75**2 - (service_s * math.log(100) - 0.05) ** 2))
    assert time_in_system_wait_budget_s(service_s, target_s) == pytest.approx(0.75)
    # the service alone misses: no load meets it
    assert max_utilization_for_time_in_system(service_s, 1.0, 0.04) == 0.0
    assert max_utilization_for_time_in_system(service_s, 1.0, 0.2, service_quantile_s=0.3) == 0.0
    assert time_in_system_wait_budget_s(service_s, 0.2, 0.3) == pytest.approx(0.2 - 0.3)


def test_headroom_derivation_by_hand():
    # 50 ms prefill, 800 ms p99 TTFT, prompt cv 1, one server
    d = derive_headroom(0.05, 0.8)
    assert d.service_scv == pytest.approx(1.0**2)
    sigma = math.sqrt(math.log(1 + 1.0**2))  # lognormal with cv 1
    service_p99_s = 0.05 * math.exp(2.326348 * sigma - sigma**2 / 2)
    assert d.service_p99_s == pytest.approx(service_p99_s, rel=1e-6)
    assert d.wait_budget_s == pytest.approx(math.sqrt(0.75**2 - (service_p99_s - 0.05) ** 2))
    # at the ceiling, one server: P = rho, m = S (1 + 1) / (2 (1 - rho)), W99 = m ln(100 rho)
    rho = d.utilization
    assert d.p_wait == pytest.approx(rho)
    assert d.conditional_wait_s == pytest.approx(0.05 / (1 - rho))
    assert d.wait_p99_s == pytest.approx(0.05 / (1 - rho) * math.log(100 * rho))
    assert d.wait_p99_s == pytest.approx(d.wait_budget_s, rel=1e-6)
    assert d.requests_per_s == pytest.approx(rho / 0.05)
    assert 0.65 < rho < 0.75  # "about 70%"
    wider = {row.prompt_cv: row.utilization for row in d.by_cv}
    assert 0.45 < wider[1.5] < 0.55  # "about 50%"
    assert d.feasible


def test_headroom_infeasible_when_the_prefill_tail_misses():
    d = derive_headroom(0.2, 0.8, prompt_cv=3.0)
    assert d.service_p99_s > 0.8
    assert d.wait_budget_s < 0
    assert not d.feasible
    assert d.utilization == 0.0


def test_pooling_raises_the_headroom_ceiling():
    d = derive_headroom(0.05, 0.8, servers=4)
    ceilings = [row.utilization for row in d.by_servers]
    assert [row.servers for row in d.by_servers] == [1, 2, 4, 8]
    assert ceilings == sorted(ceilings)


def test_pool_of_two_waits_less_by_hand():
    # c = 2 at rho = 0.8: pooled Wq = C / (2 (1 - rho)) S with C = 2 rho^2 / (1 + rho);
    # split Wq = rho S / (1 - rho); ratio rho / (1 + rho)
    rho, service_s = 0.8, 1.0
    comparison = pool_comparison(2 * rho / service_s, service_s, 2)
    pooled_s = (2 * rho**2 / (1 + rho)) * service_s / (2 * (1 - rho))
    split_s = rho * service_s / (1 - rho)
    assert comparison.pooled_mean_wait_s == pytest.approx(pooled_s)
    assert comparison.split_mean_wait_s == pytest.approx(split_s)
    assert comparison.mean_wait_ratio == pytest.approx(rho / (1 + rho))
    assert comparison.pooled_wait_quantile_s < comparison.split_wait_quantile_s
    assert comparison.split_p_wait == pytest.approx(rho)


# ---- properties -----------------------------------------------------------------------

rhos = st.floats(min_value=0.001, max_value=0.995)
scvs = st.floats(min_value=0.0, max_value=6.0)


def erlang_b_by_recursion(servers: int, offered_load: float) -> float:
    """B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)) all the way to c: every step, no cut."""
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = offered_load * blocking / (k + offered_load * blocking)
    return blocking


@settings(max_examples=100, deadline=None)
@given(
    servers=st.integers(1, 12_000),
    per_server=st.one_of(
        st.floats(min_value=0.0, max_value=2.0),
        st.floats(min_value=0.9, max_value=1.0),  # near c, where the most terms matter
        st.integers(0, 2).map(float),  # a = 0, c or 2c: floor(a) exact
    ),
)
def test_erlang_b_from_the_terms_that_matter_is_the_whole_recursion(servers, per_server):
    """The sum of ~9 sqrt(a) terms and the recursion stopped where B drops below the
    smallest normal double (erlang_b's way above RECURSION_UP_TO servers, drawn here at
    any c) agree with the recursion over all c steps to 1e-12 (both round at each step),
    or both are below that double (where the terms give 0.0)."""
    load = servers * per_server
    expected = erlang_b_by_recursion(servers, load)
    tolerance = {"rel": 1e-12, "abs": sys.float_info.min}
    assert _erlang_b_from_terms(servers, load) == pytest.approx(expected, **tolerance)
    assert erlang_b(servers, load) == pytest.approx(expected, **tolerance)


def test_erlang_b_keeps_the_recursions_bits_where_it_runs_it():
    """Up to RECURSION_UP_TO servers erlang_b is the recursion to the last bit: a plan's
    program can tip to another layout of the same cost on a 1e-14 difference (the default
    instance did), so the pools of ordinary plans keep their numbers. The terms, by the
    same pair, differ in the last bits (this pair was found so)."""
    servers, load = RECURSION_UP_TO, 0.95 * RECURSION_UP_TO
    assert erlang_b(servers, load) == erlang_b_by_recursion(servers, load)
    assert _erlang_b_from_terms(servers, load) == pytest.approx(
        erlang_b_by_recursion(servers, load), rel=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(servers=st.integers(1, 5000), rho=st.floats(min_value=0.0, max_value=0.9999))
def test_erlang_c_is_a_probability_for_thousands_of_servers(servers, rho):
    value = erlang_c(servers, servers * rho)
    assert math.isfinite(value)
    assert 0.0 <= value <= 1.0


@settings(max_examples=80, deadline=None)
@given(servers=st.integers(1, 64), rho_a=rhos, rho_b=rhos, scv=scvs)
def test_waits_rise_with_utilization(servers, rho_a, rho_b, scv):
    low, high = sorted((rho_a, rho_b))
    service_s = 0.1

    def rate(rho: float) -> float:
        return rho * servers / service_s

    assert mgc_mean_wait_s(rate(low), service_s, scv, servers) <= mgc_mean_wait_s(
        rate(high), service_s, scv, servers
    ) * (1 + 1e-9)
    assert wait_quantile_s(rate(low), service_s, scv, servers) <= wait_quantile_s(
        rate(high), service_s, scv, servers
    ) * (1 + 1e-9)


@settings(max_examples=80, deadline=None)
@given(servers=st.integers(1, 200), rho=rhos, scv=scvs)
def test_pooling_never_raises_the_wait(servers, rho, scv):
    service_s = 0.2
    comparison = pool_comparison(rho * servers / service_s, service_s, servers, scv)
    assert comparison.pooled_mean_wait_s <= comparison.split_mean_wait_s * (1 + 1e-9)
    assert comparison.pooled_wait_quantile_s <= comparison.split_wait_quantile_s * (1 + 1e-9)
    assert comparison.pooled_p_wait <= comparison.split_p_wait * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    servers=st.integers(1, 16),
    scv_a=scvs,
    scv_b=scvs,
    target_over_service=st.floats(min_value=1.01, max_value=200.0),
)
def test_larger_spread_never_raises_the_ceiling(servers, scv_a, scv_b, target_over_service):
    narrow, wide = sorted((scv_a, scv_b))
    service_s = 0.05
    target_s = service_s * target_over_service
    assert (
        max_utilization_for_time_in_system(service_s, wide, target_s, servers)
        <= max_utilization_for_time_in_system(service_s, narrow, target_s, servers) + 1e-8
    )


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(min_value=0.0, max_value=0.999), scv=scvs)
def test_mg1_mean_is_probability_times_conditional_mean(rho, scv):
    # the quantile model's mean P x m equals Pollaczek-Khinchine for one server
    service_s = 0.3
    p_wait = erlang_c(1, rho)
    conditional_mean_s = service_s * (1 + scv) / (2 * (1 - rho))
    assert p_wait * conditional_mean_s == pytest.approx(
        mg1_mean_wait_s(rho / service_s, service_s, scv), rel=1e-9, abs=1e-15
    )


@settings(max_examples=60, deadline=None)
@given(
    servers=st.integers(1, 16),
    cv_a=st.floats(min_value=0.0, max_value=3.0),
    cv_b=st.floats(min_value=0.0, max_value=3.0),
    target_over_prefill=st.floats(min_value=1.01, max_value=200.0),
)
def test_wider_prompt_spread_never_raises_the_headroom_ceiling(
    servers, cv_a, cv_b, target_over_prefill
):
    narrow, wide = sorted((cv_a, cv_b))
    prefill_s = 0.05
    target_s = prefill_s * target_over_prefill
    assert (
        ceiling(prefill_s, target_s, wide, servers).utilization
        <= ceiling(prefill_s, target_s, narrow, servers).utilization + 1e-8
    )
