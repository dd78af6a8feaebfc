"""Many solves: a folder of instances against their goldens (batch), a grid of changes (sweep).

Imports: anything in solver/."""
