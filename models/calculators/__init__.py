"""Stand-alone calculators: the back-of-envelope fleet estimate and the voice latency budget.

Imports: models.physics, models.serving, models.operations (the SLO's zone spread) and
models.schema (the quantity types). The instance schema imports voice.py, so voice.py
reads only the quantity types."""
