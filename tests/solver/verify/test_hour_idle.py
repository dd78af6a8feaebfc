"""The hour verifier's idle share (solver.verify.hour_idle), by hand on
tests/solver/time/test_hourly_explain.py's instance: two regions, H100 alone at every
load, one GPU a replica rented by the GPU, so each hour's pool of n = ceil(L) replicas
(L its load in H100 replicas) is busy L GPUs and paid n:

    idle = 1 - sum_h L_h / sum_h n_h

east:  busy 12 x 7.5 + 10 x 3.75 + 2 x 5.625 = 138.75;  paid 12 x 8 + 10 x 4 + 2 x 6 = 148
west:  busy 12 x 2.5 + 10 x 1.25 + 2 x 1.875 =  46.25;  paid 12 x 3 + 10 x 2 + 2 x 2 =  60

    idle = 1 - 185 / 208
"""

import pytest

from solver.solve import SolveSettings, solve
from solver.verify.hour_idle import check_idle_fraction, idle_range
from tests.solver.time.test_hourly_explain import _instance

HAND_IDLE = 1 - (138.75 + 46.25) / (148 + 60)


@pytest.fixture(scope="module")
def solved():
    instance = _instance()
    return instance, solve(instance, SolveSettings.of(instance, mip_gap=0.0))


def test_the_stated_and_the_recomputed_idle_share_are_the_hand_figure(solved):
    instance, plan = solved
    assert plan.idle_fraction == pytest.approx(HAND_IDLE, abs=1e-9)
    low, high = idle_range(instance, plan)
    assert low == pytest.approx(HAND_IDLE, abs=1e-9) and high == pytest.approx(low, abs=1e-12)
    assert check_idle_fraction(instance, plan) == []


@pytest.mark.parametrize("shift", [-0.01, 0.01])
def test_an_idle_share_one_point_off_is_a_violation(solved, shift):
    instance, plan = solved
    tampered = plan.model_copy(update={"idle_fraction": HAND_IDLE + shift})
    (found,) = check_idle_fraction(instance, tampered)
    assert found.requirement == "idle_fraction" and f"{HAND_IDLE:.4%}" in found.message
