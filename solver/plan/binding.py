"""A constraint that shapes the plan (`Binding`), as the plan's `binding` lists it.

A row binds when it is tight at the plan, when the pricing LP prices it, or in whole
units: a limit (`<=`) whose slack is smaller than the least step its users can take
(one more 8-GPU server's 10.2 kW under a power cap with 6.4 kW left, one more 4-GPU
replica under a supply with 3 GPUs left). The pricing LP keeps the plan's discrete
choices, so such a row has slack there and no price, yet it sets the plan: the next
server does not fit. `whole_unit` states the step; its price is not computed.
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict

from models.schema.quantities import NUMBER_NOT_BOOLEAN, PlanInteger

Real = Annotated[float, NUMBER_NOT_BOOLEAN]
"""A number of the row: never `true` nor text (solver.plan.records.Real)."""


class Binding(BaseModel):
    """A constraint that shapes the plan, with its shadow price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Row name, e.g. `capacity[lose=eu-west,chat,us-east,unified]`."""
    family: str
    description: str = ""
    slack: Real
    """Slack at the (integer) plan; 0 means the row is tight there."""
    shadow_price: Real
    """d(cost)/d(rhs) in the pricing LP (see SHADOW_PRICE_NOTE)."""
    unit: str = ""
    period: PlanInteger | None = None
    """The row's period: its first UTC hour (an hourly plan's row; None in a static plan,
    whose one period is the whole day)."""
    month: PlanInteger | None = None
    """The month of the procurement horizon whose program the row is in (None without
    policy.horizon_months)."""
    whole_unit: Real = 0.0
    """Where the row binds in whole units: the least its left-hand side grows by when one
    more unit is bought or run (kW of one more server, GPUs of one more replica), more
    than its `slack`; 0 elsewhere. Such a row is not priced (`shadow_price` 0)."""
    whole_unit_of: str = ""
    """What one unit is: `one` and the integer column (`one replicas[chat,...,us-east]`),
    or for a power cap `one 8-GPU h100-sxm server` (solver.readback.site.whole_unit_power)."""

    @property
    def in_whole_units(self) -> bool:
        """Whether the row binds in whole units (see `whole_unit`)."""
        return self.whole_unit > 0.0
