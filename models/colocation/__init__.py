"""Several workloads on the same GPUs: co-resident engines, their memory and interference,
multi-LoRA, same-model merges, swapping and warm/cold splits.

Imports: models.physics, models.serving and models.schema (the instance's records, in
warm_cold.py, and the traffic records)."""
