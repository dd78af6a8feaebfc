"""Cost attribution: which phase of serving (the prompt or the reply) a pool's GPU time
pays for, and what a million tokens of each costs.

A unified replica runs prompt tokens and decode tokens in the same iterations (chunked
prefill), so its time has no natural owner. The step model splits it by the Shapley
value of the two players in one iteration of mean batch B (`models.serving.batch_model`): with
t(D) the iteration of B decode tokens alone, t(P) the Q(B) = B P (1 - h) / O prompt
tokens alone, and t(PD) both together,

    prefill time = (t(P) + t(PD) - t(D)) / 2,     decode time = (t(D) + t(PD) - t(P)) / 2,

the average of what each phase costs alone and what it adds to the other; the two sum to
t(PD). A phase that rides free on the other's weight reads (a few prompt tokens in a
memory-bound decode step) is charged half of its stand-alone time, not nothing.
Prefill-only replicas are all prefill; decode-only replicas all decode.

Money follows time: a pool's $/month splits by its time shares, and
$ per million input tokens = cost x prefill share / input tokens per month (likewise
for output tokens and the decode share). Tokens per month are the average rate served,
not the peak the fleet is sized for: the price of a token actually served.
"""

import math
from dataclasses import dataclass

from models.physics.step_time import StepModel
from models.serving.replica import MixTokens

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


@dataclass(frozen=True)
class PhaseShares:
    """The split of a pool's GPU time between prefill and decode (they sum to 1)."""

    prefill: float
    decode: float

    @classmethod
    def of_times(cls, prefill_s: float, decode_s: float) -> "PhaseShares":
        """Shares from the seconds each phase owns (both zero: an even split)."""
        total = prefill_s + decode_s
        if total <= 0:
            return cls(0.5, 0.5)
        prefill = min(max(prefill_s / total, 0.0), 1.0)
        return cls(prefill, 1.0 - prefill)


PREFILL_ONLY = PhaseShares(1.0, 0.0)
DECODE_ONLY = PhaseShares(0.0, 1.0)


@dataclass(frozen=True)
class IterationTimes:
    """The three iteration times the Shapley split needs, seconds."""

    decode_alone_s: float
    """t(D): B decode tokens, no prompt tokens."""
    prefill_alone_s: float
    """t(P): the Q(B) prompt tokens of the iteration, no decode tokens."""
    both_s: float
    """t(PD): the iteration as it runs."""

    @property
    def shares(self) -> PhaseShares:
        """Shapley split: prefill (t(P) + t(PD) - t(D)) / 2, decode the rest of t(PD)."""
        prefill_s = (self.prefill_alone_s + self.both_s - self.decode_alone_s) / 2
        decode_s = (self.decode_alone_s + self.both_s - self.prefill_alone_s) / 2
        return PhaseShares.of_times(max(prefill_s, 0.0), max(decode_s, 0.0))


def unified_iteration_times(steps: StepModel, mix: MixTokens, batch: float) -> IterationTimes:
    """t(D), t(P), t(PD) of a unified replica at mean batch `batch`.

    Q(B) = B P (1 - h) / O prompt tokens ride in each iteration (each attending on average
    to the cached prefix plus half the new prompt, P h + P (1 - h) / 2); decode tokens
    attend to the mean context of the mix. Times from `StepModel.iteration_s`.
    """
    batch = max(batch, 0.0)
    prompt_tokens = batch * mix.new_prompt / mix.output
    prompt_context = mix.cached_prompt + mix.new_prompt / 2
    return IterationTimes(
        decode_alone_s=steps.iteration_s(batch, mix.context),
        prefill_alone_s=steps.iteration_s(0.0, mix.context, prompt_tokens, prompt_context),
        both_s=steps.iteration_s(batch, mix.context, prompt_tokens, prompt_context),
    )


def unified_phase_shares(steps: StepModel, mix: MixTokens, batch: float) -> PhaseShares:
    """The prefill and decode shares of a unified replica's time at mean batch `batch`
    (`unified_iteration_times(...).shares`)."""
    return unified_iteration_times(steps, mix, batch).shares


@dataclass(frozen=True)
class PoolCost:
    """One pool's money and GPU time, with its phase split."""

    cost_per_month: float
    gpu_hours_per_month: float
    shares: PhaseShares


@dataclass(frozen=True)
class Attribution:
    """What one workload's pools in one region cost, by phase and per token."""

    cost_per_month: float
    prefill_share: float
    decode_share: float
    prefill_gpu_hours_per_month: float
    decode_gpu_hours_per_month: float
    usd_per_million_input_tokens: float | None
    """None when no input token is served (no traffic lands here)."""
    usd_per_million_output_tokens: float | None

    @property
    def bill(self) -> str:
        """The phase that takes the larger share of the GPU time: `prefill` or `decode`."""
        return (
            "prefill"
            if self.prefill_gpu_hours_per_month >= self.decode_gpu_hours_per_month
            else "decode"
        )


def attribute(
    pools: list[PoolCost], input_tokens_per_s: float, output_tokens_per_s: float, hours: float
) -> Attribution:
    """Pools of one workload in one region, priced by phase.

    Phase cost = sum over pools of cost x share; phase GPU-hours likewise. The shares
    reported are of the cost (of the GPU-hours when the pools cost nothing: an owned
    fleet). $/Mtok = phase cost / (tokens/s x 3600 x hours per month / 1e6).
    """
    cost = sum(p.cost_per_month for p in pools)
    prefill_cost = sum(p.cost_per_month * p.shares.prefill for p in pools)
    gpu_hours = sum(p.gpu_hours_per_month for p in pools)
    prefill_hours = sum(p.gpu_hours_per_month * p.shares.prefill for p in pools)
    if cost > 0:
        shares = PhaseShares.of_times(prefill_cost, cost - prefill_cost)
    else:
        shares = PhaseShares.of_times(prefill_hours, gpu_hours - prefill_hours)
    return Attribution(
        cost_per_month=cost,
        prefill_share=shares.prefill,
        decode_share=shares.decode,
        prefill_gpu_hours_per_month=prefill_hours,
        decode_gpu_hours_per_month=gpu_hours - prefill_hours,
        usd_per_million_input_tokens=_per_million(cost * shares.prefill, input_tokens_per_s, hours),
        usd_per_million_output_tokens=_per_million(
            cost * shares.decode, output_tokens_per_s, hours
        ),
    )


def _per_million(cost_per_month: float, tokens_per_s: float, hours: float) -> float | None:
    tokens_per_month = tokens_per_s * SECONDS_PER_HOUR * hours
    if tokens_per_month <= 0 or not math.isfinite(tokens_per_month):
        return None
    return cost_per_month / (tokens_per_month / TOKENS_PER_MILLION)
