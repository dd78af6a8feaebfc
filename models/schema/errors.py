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
        """`file:line: path: message`, each part cut to a screenful: a key of 100,000
        characters, echoed in the path and in the message, printed 200 KB per problem."""
        where = _cut(f"{self.file}:{self.line}" if self.line else self.file, SHOWN_PATH_CHARS)
        message = _cut(self.message, SHOWN_MESSAGE_CHARS)
        return (
            f"{where}: {_cut(self.path, SHOWN_PATH_CHARS)}: {message}"
            if self.path
            else (f"{where}: {message}")
        )


SHOWN_PATH_CHARS = 300
"""Characters of a file name or field path shown in a message (longer ones are cut)."""
SHOWN_MESSAGE_CHARS = 2000
"""Characters of a problem's message shown (the longest real ones list some 30 keys)."""


def shown_name(name: object) -> str:
    """A declared name as a message lists it: as written where it prints as itself, else
    as Python writes it (`'us-east\\t'`, `' us-east'`): a tab printed as spaces, a newline
    or outer spaces made a name look like the one asked for ('unknown region 'us-east'
    (declared: us-east      )')."""
    text = str(name)
    return text if text.isprintable() and text == text.strip() else repr(text)


def _cut(text: str, most: int) -> str:
    if len(text) <= most:
        return text
    return f"{text[: most - 40]}... ({len(text):,} characters, cut)"


class InputError(Exception):
    """The input cannot be used; `issues` lists every problem found."""

    def __init__(self, issues: list[Issue]):
        self.issues = issues
        super().__init__("\n".join(str(issue) for issue in issues))
