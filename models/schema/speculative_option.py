"""`policy.speculative`: the speculative-decoding options an instance lets the program use.

Each option names a drafter (a draft model by name, or EAGLE heads / MTP given by their
cost ratio), the draft length k and the mean acceptance rate a; the planner enumerates
every unified and decode candidate with and without each option (`models.physics.speculative`
holds the physics), so the program turns speculation on per pool where it pays.
"""

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.physics.llm import LlmSpec
from models.physics.speculative import Speculation
from models.schema.quantities import AcceptanceRate, DraftCostRatio, DraftTokens


class SpeculativeOption(BaseModel):
    """One speculative-decoding option (`policy.speculative[]`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    """What the plan calls the option (letters, digits, `-` and `_`), e.g. `eagle3`."""
    draft_model: str | None = Field(default=None, min_length=1, max_length=200)
    """A draft model by name: one of the instance's `models` or a catalog model, run on
    the replica's own GPUs (e.g. `llama-3.1-8b` for a 70B). Give this or
    `draft_cost_ratio`."""
    draft_cost_ratio: DraftCostRatio | None = None
    """One draft step's time over one target decode pass at the same batch and context
    (EAGLE heads or an MTP module: about one layer's share, 0.02-0.1). Give this or
    `draft_model`."""
    tokens: DraftTokens
    """k: tokens drafted per cycle."""
    acceptance_rate: AcceptanceRate
    """a: the mean chance one drafted token is accepted (measured on your traffic)."""

    @model_validator(mode="after")
    def _one_drafter(self) -> Self:
        """Exactly one of `draft_model` and `draft_cost_ratio`."""
        if (self.draft_model is None) == (self.draft_cost_ratio is None):
            raise ValueError(
                f"speculative option {self.name!r}: give exactly one of draft_model and "
                "draft_cost_ratio"
            )
        return self

    def resolve(self, draft: LlmSpec | None) -> Speculation:
        """The physics' record of this option, with the draft model's spec (None for a
        cost ratio)."""
        return Speculation(
            name=self.name,
            tokens=self.tokens,
            acceptance_rate=self.acceptance_rate,
            draft=draft,
            draft_cost_ratio=self.draft_cost_ratio,
        )
