"""One replica's roofline: GPU and LLM records and their catalogs, efficiency factors, memory,
step times (prefill, decode, collectives, MoE, speculation) and KV tiers.

Imports: models.schema.quantities only (the unit types), never the instance schema, so that
the roofline loads without the schema, its validators and the config reader."""
