"""Input errors: every problem with a file, each naming where it is."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Issue:
    """One problem in an input file."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class InputError(Exception):
    """The input cannot be used; `issues` lists every problem found."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        super().__init__("\n".join(str(issue) for issue in issues))
