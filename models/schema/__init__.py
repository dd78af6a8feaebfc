"""What a capacity planner writes down: the instance file's schema (pydantic, extra=forbid), the
quantity types and limits every field is held to, and the input errors that name the field.

Imports: models.physics (the catalogs and records the instance refers to), models.io (the
config.json import, and the documents and overrides the sweep grid reads), models.calculators
(the voice budget), models.serving.replica (the records a workload becomes for the serving
model, in serving_inputs.py) and models.serving.prefix_kv (the prefix cache of a pool serving
a workload: one description for planner, verifier and simulator, in serving_inputs.py).
What instance.py imports from those reads back only the value vocabulary here (quantities,
limits, errors, traffic), which imports nothing outside this package: the packages point at
each other, the modules make no circle."""
