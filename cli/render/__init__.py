"""Rendering: tables for the terminal, Markdown, JUnit and the HTML report. No arithmetic.

Imports: the records it draws: solver.plan (the plan), solver.analysis (the report's data),
solver.studies (a batch's results, for JUnit), models.calculators and models.serving (the
estimate and its headroom), models.physics (perf's memory and efficiency tables),
models.schema (the input errors), models.io.output_files (terminal_safe: a name's
escape sequences are shown, not obeyed) and models.io.output_kinds (the HTML report's
opening, by which an earlier report is recognised before it is replaced)."""
