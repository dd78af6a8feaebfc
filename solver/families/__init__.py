"""Constraint families of the fleet program, one module each, each opening with its math.

Every family is registered once with a one-line description and the unit of its dual,
so that a row name such as `capacity[lose=eu-west,chat,us-east,decode]` can be read back
as a sentence in the report, with its shadow price in the right unit.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """A named group of rows that say the same thing for different indices."""

    name: str
    index: str
    """The index tuple, e.g. `[scenario,workload,region,phase]`."""
    description: str
    """One line: what every row of the family requires."""
    dual_unit: str
    """Unit of the shadow price: the objective ($/month) per unit of right-hand side."""
    reported: bool = True
    """Whether its rows appear among the binding constraints (bookkeeping rows do not)."""


FAMILIES: dict[str, Family] = {}


def register(
    name: str, index: str, description: str, dual_unit: str, reported: bool = True
) -> Family:
    """Declare a family once; a second declaration of the same name is a bug."""
    if name in FAMILIES:
        raise ValueError(f"constraint family {name} registered twice")
    family = Family(name, index, description, dual_unit, reported)
    FAMILIES[name] = family
    return family
