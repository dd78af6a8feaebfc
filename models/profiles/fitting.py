"""Fitting efficiency factors to measurements: the bounds each factor may take and a
derivative-free minimiser. One home for `calibration.calibrate` (the catalog's fit on the
repository's data) and `models.profiles.fit` (a user's fit on their own runs).

Each factor x in [lo, hi] is searched as the logit z = log(u / (1 - u)), u = (x - lo) /
(hi - lo), so that every point the minimiser visits is a valid factor. The loss each
caller minimises is a mean squared log error: log(predicted / measured)^2 treats a 2x
over- and a 2x under-prediction alike.
"""

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

FactorsT = TypeVar("FactorsT", bound=BaseModel)

BOUNDS = {
    "prefill_flops_fraction": (0.15, 0.9),
    "decode_flops_fraction": (0.15, 0.9),
    "hbm_fraction": (0.3, 0.95),
    "step_overhead_s": (2e-4, 0.03),
    "allreduce_latency_s": (2e-6, 2e-4),
    "scaleup_fraction": (0.1, 0.95),
    "sequence_overhead_s": (1e-8, 1e-4),
}
"""The physical range each fitted factor may take: fractions of peak an engine plausibly
reaches, and fixed costs between a fast kernel launch and a slow Python scheduler."""


def to_vector(factors: BaseModel, names: tuple[str, ...]) -> np.ndarray:
    """The logits of `names` (module docstring), clipped inside the bounds."""
    values = []
    for name in names:
        low, high = BOUNDS[name]
        x = (getattr(factors, name) - low) / (high - low)
        x = min(max(x, 1e-4), 1 - 1e-4)
        values.append(math.log(x / (1 - x)))
    return np.array(values)


def from_vector(vector: np.ndarray, base: FactorsT, names: tuple[str, ...]) -> FactorsT:
    """`base` with `names` set from their logits."""
    update = {}
    for name, value in zip(names, vector, strict=True):
        low, high = BOUNDS[name]
        update[name] = low + (high - low) / (1 + math.exp(-value))
    return base.model_copy(update=update)


def nelder_mead(
    fun: Callable[[np.ndarray], float], start: np.ndarray, steps: int = 240, scale: float = 0.6
) -> np.ndarray:
    """A plain Nelder-Mead minimiser (numpy only): reflect, expand, contract or shrink the
    simplex `steps` times; the best vertex."""
    dim = len(start)
    simplex = [start] + [start + scale * np.eye(dim)[i] for i in range(dim)]
    values = [fun(x) for x in simplex]
    for _ in range(steps):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centroid + (centroid - worst)
        f_reflected = fun(reflected)
        if f_reflected < values[0]:
            expanded = centroid + 2 * (centroid - worst)
            f_expanded = fun(expanded)
            if f_expanded < f_reflected:
                simplex[-1], values[-1] = expanded, f_expanded
            else:
                simplex[-1], values[-1] = reflected, f_reflected
        elif f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
        else:
            contracted = centroid + 0.5 * (worst - centroid)
            f_contracted = fun(contracted)
            if f_contracted < values[-1]:
                simplex[-1], values[-1] = contracted, f_contracted
            else:
                best = simplex[0]
                simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
                values = [values[0]] + [fun(x) for x in simplex[1:]]
    return simplex[int(np.argmin(values))]
