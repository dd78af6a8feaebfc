"""Engine profiles fitted on one's own measurements (`fleetplan calibrate`): benchmark runs
read from CSV and the benchmark tools' JSON (measurements; where each tool's report holds
each figure: benchmark_reports), the factor bounds and the minimiser (fitting), and the fit
that replays each run as the tool ran it (fit). The file a fit writes is read back by
models.physics.profile_files.

Imports: models.io (the bounded readers), models.physics (the catalogs, the factors),
models.serving (the closed-loop replay, the replica), models.schema (input errors)."""
