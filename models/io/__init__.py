"""Reading and writing files: bounded YAML and JSON documents, instance loading, `--set`
overrides, config.json import and the one writer of output files.

Imports: models.schema and models.physics (the YAML reader, and the LLM records config.json
import builds). The instance schema imports hf_config.py (and through it documents.py), so
those two read from the schema only its errors and limits."""
