"""Fitting the performance model's efficiency factors to published measurements.

A tool, not part of the installed package: `python -m calibration.calibrate` fits and
prints (`--write` updates models/physics/catalog/efficiency.yaml; `make calibrate`), and
`make bench` reports the catalog's factors against the data in `calibration/data/`.
"""
