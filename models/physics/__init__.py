"""One replica's roofline: GPU and LLM records and their catalogs, efficiency factors, memory,
step times (prefill, decode, collectives, MoE, speculation) and KV tiers.

Imports: from models.schema only the value vocabulary (quantities, limits, errors, traffic);
never the instance schema."""
