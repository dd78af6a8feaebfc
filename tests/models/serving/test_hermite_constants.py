"""The Gauss-Hermite rule written out in models/serving/iteration_mixture.py (so that the
physics does not import numpy) is numpy's, to the bit."""

import math

import numpy as np

from models.serving.iteration_mixture import _HERMITE_NODES, _HERMITE_WEIGHTS, poisson_points


def test_the_nodes_and_weights_are_numpys_hermegauss_9():
    nodes, weights = np.polynomial.hermite_e.hermegauss(9)
    assert list(_HERMITE_NODES) == nodes.tolist()
    assert list(_HERMITE_WEIGHTS) == (weights / weights.sum()).tolist()


def test_the_rule_integrates_the_normal_moments():
    """A 9-point rule is exact for polynomials up to degree 17: E[Z^2] = 1, E[Z^4] = 3,
    E[Z^6] = 15 (= 5 * 3 * 1), odd moments 0."""
    for power, moment in [(0, 1.0), (1, 0.0), (2, 1.0), (3, 0.0), (4, 3.0), (6, 5 * 3 * 1)]:
        total = sum(w * z**power for z, w in zip(_HERMITE_NODES, _HERMITE_WEIGHTS, strict=True))
        assert math.isclose(total, moment, rel_tol=1e-12, abs_tol=1e-12), power


def test_poisson_points_above_the_exact_mean_keep_mean_and_variance():
    """N(mean, mean) at the 9 points: mean 100 and variance 100 (no clipping at 0 there:
    the lowest point is 100 - 4.51 * 10 > 0)."""
    mean = 100.0
    points = poisson_points(mean)
    first = sum(w * v for v, w in points)
    second = sum(w * (v - mean) ** 2 for v, w in points)
    assert math.isclose(first, mean, rel_tol=1e-12)
    assert math.isclose(second, mean, rel_tol=1e-12)
