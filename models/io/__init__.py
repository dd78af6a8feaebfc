"""Reading and writing files: bounded YAML and JSON documents, instance loading, `--set`
overrides, config.json import and the one writer of output files.

Imports: models.schema and models.physics."""
