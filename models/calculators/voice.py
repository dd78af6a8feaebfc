"""The voice latency budget: time to first audio, allocated line by line.

A voice turn is heard, not read: the user stops speaking, and the target is the time
until the assistant's first audible sound (`slo.first_audio_ms`). The LLM is one line
of that budget, and usually not the largest:

    first audio = network round trip + endpointing + ASR final
                  + LLM (TTFT + first-clause tokens x TPOT)
                  + TTS time to first audio

Endpointing (waiting for silence long enough to decide the user has finished) is
typically 200-500 ms on its own. What is left after the fixed lines is the LLM's
allowance R; the LLM must produce the first clause (k tokens, the unit a streaming TTS
starts speaking from) within it:

    TTFT p99 + k x TPOT p99 <= R

Split rule (a stated fraction, `voice.ttft_share` = s, default 1/2):

    TTFT p99 target = s x R,    TPOT p99 target = (1 - s) x R / k

Why a fraction and why one half: the split that minimises cost depends on the
configuration the solve picks (a prefill-heavy prompt on a slow GPU wants more TTFT,
a large batch wants more TPOT), while the candidate table is built from one pair of
targets per workload; so the split is stated, shown in the budget table and
overridable, and the default gives each phase the same time, which bounds how far
either target can be from its cost-optimal value (neither gets less than half of what
the cost-minimising split could give it, at s = 1/2). Summing two p99s is
conservative: the p99 of TTFT + k TPOT is at most the sum of their p99s.
"""

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from models.schema.quantities import FirstClauseTokens, TtftShare, VoiceStageMs

DEFAULT_TTFT_SHARE = 0.5
"""Share of the LLM's allowance given to TTFT (see the module docstring)."""

FIXED_LINES = ("network_rtt_ms", "endpointing_ms", "asr_ms", "tts_first_audio_ms")
"""The budget's fixed lines, in the order a turn spends them."""

LINE_LABELS = {
    "network_rtt_ms": "network round trip",
    "endpointing_ms": "endpointing (end-of-speech detection)",
    "asr_ms": "ASR final transcript",
    "tts_first_audio_ms": "TTS time to first audio",
}


class Voice(BaseModel):
    """A voice workload's fixed latency lines and first clause: what `slo.first_audio_ms`
    is spent on before and after the LLM."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    network_rtt_ms: VoiceStageMs
    """Round trip between the user's device and the serving region, ms."""
    endpointing_ms: VoiceStageMs
    """Silence the endpointer waits for before it declares the turn over, ms."""
    asr_ms: VoiceStageMs
    """Speech recognition's final-transcript latency after the endpoint, ms."""
    tts_first_audio_ms: VoiceStageMs
    """Text-to-speech time from the first clause's text to its first audio, ms."""
    first_clause_tokens: FirstClauseTokens
    """Output tokens of the first clause, the text streaming TTS starts speaking from."""
    ttft_share: TtftShare = DEFAULT_TTFT_SHARE
    """Share of what is left for the LLM that goes to TTFT; the rest, divided by
    `first_clause_tokens`, is the TPOT target."""


class VoiceBudgetError(ValueError):
    """The fixed lines leave nothing for the LLM."""


@dataclass(frozen=True)
class BudgetLine:
    """One line of the budget."""

    key: str
    """`network_rtt_ms`, ..., or `llm_ttft_ms` / `llm_first_clause_decode_ms`."""
    label: str
    ms: float


@dataclass(frozen=True)
class VoiceBudget:
    """A first-audio budget allocated line by line, and the LLM targets it leaves."""

    first_audio_ms: float
    lines: tuple[BudgetLine, ...]
    """Fixed lines, then the LLM's TTFT and first-clause decode; they sum to the budget."""
    fixed_ms: float
    llm_ms: float
    """What the fixed lines leave for the LLM: first_audio - fixed."""
    ttft_share: float
    first_clause_tokens: int
    ttft_p99_ms: float
    """ttft_share x llm_ms."""
    tpot_p99_ms: float
    """(1 - ttft_share) x llm_ms / first_clause_tokens."""

    @property
    def largest_line(self) -> BudgetLine:
        """The line that spends the most of the budget."""
        return max(self.lines, key=lambda line: line.ms)


def file_field(key: str) -> str:
    """A budget figure as the instance file names it: `voice.asr_ms`, `slo.first_audio_ms`."""
    return f"slo.{key}" if key == "first_audio_ms" else f"voice.{key}"


def voice_budget(
    first_audio_ms: float, voice: Voice, name: Callable[[str], str] = file_field
) -> VoiceBudget:
    """Allocate `first_audio_ms` over the fixed lines and split the rest between TTFT
    and the first clause's decode (the formula and split rule: module docstring).

    Args:
        first_audio_ms: The p99 time-to-first-audio target.
        voice: The fixed lines and the split.
        name: How a refusal names a figure (`first_audio_ms`, `asr_ms`, ...): the file's
            field by default, a command-line flag where the figures came from flags.

    Raises:
        VoiceBudgetError: the fixed lines take the whole budget or more; the message
            names every fixed line with its ms and how much is missing.
    """
    fixed = [(key, float(getattr(voice, key))) for key in FIXED_LINES]
    fixed_ms = sum(ms for _, ms in fixed)
    llm_ms = first_audio_ms - fixed_ms
    if llm_ms <= 0:
        spent = " + ".join(f"{name(key)} {ms:g}" for key, ms in fixed)
        short = f" ({-llm_ms:g} ms short)" if llm_ms < 0 else ""
        raise VoiceBudgetError(
            f"{name('first_audio_ms')} is {first_audio_ms:g} ms but the fixed lines take "
            f"{spent} = {fixed_ms:g} ms, leaving nothing for the LLM{short}; raise "
            f"{name('first_audio_ms')} above {fixed_ms:g} ms or shorten the largest line "
            f"({name(max(fixed, key=lambda item: item[1])[0])})"
        )
    share = voice.ttft_share
    ttft_ms = share * llm_ms
    decode_ms = llm_ms - ttft_ms
    clause = voice.first_clause_tokens
    lines = (
        *(BudgetLine(key, LINE_LABELS[key], ms) for key, ms in fixed),
        BudgetLine("llm_ttft_ms", "LLM time to first token (p99)", ttft_ms),
        BudgetLine(
            "llm_first_clause_decode_ms",
            f"LLM first clause, {clause} tokens x TPOT (p99)",
            decode_ms,
        ),
    )
    return VoiceBudget(
        first_audio_ms=first_audio_ms,
        lines=lines,
        fixed_ms=fixed_ms,
        llm_ms=llm_ms,
        ttft_share=share,
        first_clause_tokens=clause,
        ttft_p99_ms=ttft_ms,
        tpot_p99_ms=decode_ms / clause,
    )
