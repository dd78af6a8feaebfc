"""fleetplan's world: instance schema, catalogs and the physics of LLM serving.

Nothing in this package imports `solver` or `cli`.
"""
