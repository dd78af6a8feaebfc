"""Stand-alone calculators: the back-of-envelope fleet estimate and the voice latency budget.

Imports: any models/ package."""
