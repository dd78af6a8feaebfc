"""The configuration every instance model shares."""

from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid", frozen=True)
"""Every instance model: unknown keys refused, frozen, and each field's attribute docstring
its JSON-schema description (the hover help editors show, `fleetplan schema`)."""
