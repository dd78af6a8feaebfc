"""Co-resident engines taking turns on one GPU: each member's engine on the shared layout,
the interference the others add to its iterations, and the coupled batches.

The GPU runs one engine's iteration at a time. Engine j has work with probability
a_j = 1 - exp(-B_j) (its resident sequences are Poisson with mean B_j), and its iteration
takes t_j(B_j), its own step alone. The interference on engine i per iteration:
    mean  X_i   = k x sum_{j != i} a_j t_j(B_j)
    p99   X99_i = k x the 0.99-quantile of sum_{j != i} I_j t_j(B99_j),  I_j ~ Bernoulli(a_j)
and the batches solve B_i = lambda_i O_i (t_i(B_i) + X_i(B)), iterated from 0 upwards to
the least fixed point (`models.colocation.coresident` states the model and its assumptions).
"""

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.colocation.shared_layout import Member, SharedLayout
from models.physics.efficiency import Efficiency
from models.physics.step_time import StepModel, step_model
from models.serving.batch_model import BatchModel, batch_p99
from models.serving.edge_search import bisect_edge
from models.serving.replica import MixTokens, Role

EXACT_ACTIVITY_STATES = 12
"""Up to this many other engines the p99 interference is exact over their activity
states; beyond, every other engine is taken as active (an upper bound)."""
FIXED_POINT_STEPS = 400
"""Most rounds of the coupled Little's-law iteration before a group is called unstable."""
FIXED_POINT_TOLERANCE = 1e-7
"""Relative change of every batch at which the coupled iteration has converged."""
BISECTION_STEPS = 40
"""Halvings of a bracket (batch or load scale): relative precision ~1e-12."""


@dataclass(frozen=True)
class GroupEngine:
    """One member's single-replica model on the shared layout."""

    member: Member
    steps: StepModel
    model: BatchModel
    cap: float
    """Largest mean batch the engine can run: token budget and engine batch cap."""

    def with_interference(self, extra_s: float) -> BatchModel:
        """The same engine with every iteration lengthened by `extra_s`."""
        steps = dataclasses.replace(self.steps, overhead_s=self.steps.overhead_s + extra_s)
        model = self.model
        return BatchModel(
            steps,
            model.mix,
            Role.UNIFIED,
            0.0,
            0.0,
            model.pool_replicas,
            request_overhead_s=model.request_overhead_s,
        )

    def batch_at(self, rate: float, extra_s: float) -> float:
        """B solving rate = B / (O (t(B) + X)) (bisection on B; the rate rises with B), or
        math.inf when it needs more than `cap`."""
        if rate <= 0:
            return 0.0
        output, step_s = self.model.mix.output, self.model.step_s

        def rate_at(batch: float) -> float:
            return batch / (output * (step_s(batch) + extra_s))

        if rate_at(self.cap) < rate:
            return math.inf
        _, high = bisect_edge(lambda b: rate_at(b) < rate, 0.0, self.cap, BISECTION_STEPS)
        return high


def group_engine(
    layout: SharedLayout, member: Member, efficiency: Efficiency, pool: float
) -> GroupEngine:
    llm = member.llm
    steps = step_model(
        layout.gpu,
        llm,
        layout.weight_precision,
        layout.kv_precision,
        layout.tp,
        layout.pp,
        efficiency,
    )
    model = BatchModel(
        steps,
        MixTokens.of(member.mix),
        Role.UNIFIED,
        0.0,
        0.0,
        pool,
        request_overhead_s=efficiency.request_overhead_s,
    )
    cap = min(model.lane_batch_limit() * 0.999, float(efficiency.max_batch_sequences))
    return GroupEngine(member, steps, model, cap)


def active_fraction(batch: float) -> float:
    """a = 1 - exp(-B): the chance a Poisson number of resident sequences is not zero."""
    return -math.expm1(-batch) if batch > 0 else 0.0


def bernoulli_sum_quantile(
    values_s: Sequence[float], probabilities: Sequence[float], quantile: float = 0.99
) -> float:
    """The `quantile` of sum_j I_j v_j with independent I_j ~ Bernoulli(p_j): exact over the
    2^n states up to `EXACT_ACTIVITY_STATES` terms, else sum_j v_j (an upper bound)."""
    if len(values_s) > EXACT_ACTIVITY_STATES:
        return math.fsum(values_s)
    states = []
    for pattern in itertools.product((0, 1), repeat=len(values_s)):
        probability = 1.0
        total = 0.0
        for on, value, p in zip(pattern, values_s, probabilities, strict=True):
            probability *= p if on else 1 - p
            total += value if on else 0.0
        states.append((total, probability))
    cumulative = 0.0
    for total, probability in sorted(states):
        cumulative += probability
        if cumulative >= quantile - 1e-12:
            return total
    return max(total for total, _ in states)


def mean_interference_s(
    engines: Sequence[GroupEngine], batches: Sequence[float], factor: float
) -> list[float]:
    """X_i = k x sum_{j != i} a_j t_j(B_j), for every engine."""
    busy = [active_fraction(b) * e.model.step_s(b) for e, b in zip(engines, batches, strict=True)]
    total = math.fsum(busy)
    return [factor * (total - own) for own in busy]


def p99_interference_s(
    engines: Sequence[GroupEngine], batches: Sequence[float], factor: float
) -> list[float]:
    """X99_i = k x the p99 of sum_{j != i} I_j t_j(B99_j)."""
    steps = [e.model.step_s(batch_p99(b)) for e, b in zip(engines, batches, strict=True)]
    active = [active_fraction(b) for b in batches]
    result = []
    for i in range(len(engines)):
        others = [j for j in range(len(engines)) if j != i]
        result.append(
            factor * bernoulli_sum_quantile([steps[j] for j in others], [active[j] for j in others])
        )
    return result


def coupled_batches(engines: Sequence[GroupEngine], factor: float) -> list[float] | None:
    """The least fixed point B_i = lambda_i O_i (t_i(B_i) + X_i(B)), or None when an engine
    cannot keep up (its batch would pass its cap)."""
    batches = [0.0] * len(engines)
    for _ in range(FIXED_POINT_STEPS):
        extra = mean_interference_s(engines, batches, factor)
        new = [e.batch_at(e.member.requests_per_s, x) for e, x in zip(engines, extra, strict=True)]
        if any(math.isinf(b) for b in new):
            return None
        if all(
            abs(n - b) <= 1e-9 + FIXED_POINT_TOLERANCE * n
            for n, b in zip(new, batches, strict=True)
        ):
            return new
        batches = new
    return None
