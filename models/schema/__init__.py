"""What a capacity planner writes down: the instance file's schema (pydantic, extra=forbid), the
quantity types and limits every field is held to, and the input errors that name the field.

Imports: models.physics and models.calculators (catalog references, the voice budget); the
value vocabulary here (quantities, limits, errors, traffic) imports nothing above it, so that
physics can use it without the instance schema."""
