"""The traffic mix reduced to what the replica model uses, in tokens (`MixTokens`): the
means, p99s and spreads of the prompt and output lengths, the prefix-cache hit rate, the
context a decode step attends to and the KV one sequence holds."""

from dataclasses import dataclass

from models.serving.replica import TrafficMix


@dataclass(frozen=True)
class MixTokens:
    """The traffic mix reduced to what the model uses, in tokens."""

    prompt: float
    prompt_p99: float
    prompt_scv: float
    output: float
    output_scv: float
    """Squared coefficient of variation of the output length, cv_o^2."""
    output_p99: float
    hit: float
    context: float
    """Mean context a decode step attends to: P + O (1 + cv_o^2) / 2."""
    footprint: float
    """KV tokens one sequence holds: P + O, less the shared prefixes held once per replica
    (`models.serving.prefix_kv`)."""
    shared_kv_tokens: float = 0.0
    """KV tokens of shared prefixes held once per replica in HBM (a fixed charge on the
    KV budget, `models.serving.prefix_kv`)."""

    def kv_sequences(self, kv_capacity_tokens: float) -> float:
        """Sequences the KV cache holds: (capacity - shared prefixes) / footprint."""
        return max(kv_capacity_tokens - self.shared_kv_tokens, 0.0) / self.footprint

    @classmethod
    def of(cls, mix: TrafficMix) -> "MixTokens":
        """The mix in tokens: lengths floored at one token, the p99s at least the means,
        the prefix-cache hit rate clipped to [0, 0.999]."""
        prompt = max(mix.prompt_mean_tokens, 1.0)
        output = max(mix.output_mean_tokens, 1.0)
        return cls(
            prompt=prompt,
            prompt_p99=max(mix.prompt_p99_tokens, prompt),
            prompt_scv=mix.prompt_cv**2,
            output=output,
            output_scv=mix.output_cv**2,
            output_p99=max(mix.output_p99_tokens, output),
            hit=min(max(mix.prefix_cache_hit_rate, 0.0), 0.999),
            context=prompt + output * (1 + mix.output_cv**2) / 2,
            footprint=prompt + output,
        )

    @property
    def new_prompt(self) -> float:
        """Prompt tokens that need prefill compute: P (1 - h)."""
        return self.prompt * (1 - self.hit)

    @property
    def new_prompt_p99(self) -> float:
        """New tokens of a p99 prompt: P99 (1 - h)."""
        return self.prompt_p99 * (1 - self.hit)

    @property
    def cached_prompt(self) -> float:
        """Prompt tokens served from the prefix cache: P h."""
        return self.prompt * self.hit
