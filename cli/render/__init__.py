"""Rendering: tables for the terminal, Markdown, JUnit and the HTML report. No arithmetic.

Imports: models/, solver/ (the plan and the reports' data)."""
