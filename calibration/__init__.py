"""Fitting the performance model's efficiency factors to published measurements.

A tool, not part of the installed package: `python -m calibration.calibrate` fits and
prints (`--write` updates models/physics/catalog/efficiency.yaml; `make calibrate`;
`--write-engines` refits only the vLLM and SGLang profiles), and `make bench` reports the
catalog's factors against the data in `calibration/data/`. rows.py reads the TensorRT-LLM,
MLPerf and Triton rows, engines.py the vLLM and SGLang rows and fits their profiles,
engine_errors.py gives their errors against a set of factors (`row_errors`), errors.py
every row's error against the catalog (`all_row_errors`), moe_rows.py reads the MoE rows,
moe_report.py reports their errors and moe.py fits the MoE constants on them.
"""
