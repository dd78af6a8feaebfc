"""The plain table writer (cli.render.plain_tables) prints the characters rich prints, and
steps aside wherever rich would lay the table out differently."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

import cli.render.tables as tables
from cli.render.plain_tables import plain_table
from cli.render.tables import TableSpec, print_tables

# Printable ASCII with spaces and rich's markup characters, so that escaping and
# wrapping are exercised; some strings qualify for the plain writer, some do not.
TEXT = st.text(alphabet=st.sampled_from("ab XZ09[]/=.:,-_%$|"), max_size=24)
# Words of those characters joined by single spaces: what the plain writer takes.
WORDS = st.lists(
    st.text(alphabet=st.sampled_from("abXZ09[]/=.:,-_%$|"), min_size=1, max_size=8),
    max_size=3,
).map(" ".join)


@st.composite
def reports(draw, text=TEXT):
    count = draw(st.integers(1, 5))
    columns = tuple(draw(st.lists(text, min_size=count, max_size=count)))
    rows = tuple(
        tuple(draw(st.lists(text, min_size=count, max_size=count)))
        for _ in range(draw(st.integers(0, 4)))
    )
    spec = TableSpec(draw(text), columns, rows, draw(text))
    return spec, draw(st.integers(20, 160))


def _printed(spec: TableSpec, width: int, plain: bool, monkeypatch) -> str:
    console = Console(file=io.StringIO(), width=width, highlight=False, soft_wrap=True)
    if not plain:
        monkeypatch.setattr(tables, "plain_table", lambda *_args: None)
    print_tables(["a header line"], [spec], "a closing note", console=console)
    monkeypatch.undo()
    return console.file.getvalue()


@given(reports())
@settings(max_examples=50, deadline=None)  # 100 took 2.1 s of CPU; the hand-made tables below
def test_the_plain_writer_prints_what_rich_prints(report):
    import pytest

    spec, width = report
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _printed(spec, width, True, monkeypatch) == _printed(spec, width, False, monkeypatch)


@given(reports(WORDS))
@settings(max_examples=50, deadline=None)  # 100 took 1.1 s of CPU
def test_plain_strings_are_written_by_the_plain_writer_as_rich_would(report):
    import pytest

    spec, width = report
    console = Console(file=io.StringIO(), width=width)
    natural = sum(
        max([len(spec.columns[i]), *(len(row[i]) for row in spec.rows)]) + 3
        for i in range(len(spec.columns))
    )
    if natural + 1 <= width and max(len(spec.title), len(spec.note)) <= width:
        rows = [list(row) for row in spec.rows]
        assert plain_table(console, spec.title, list(spec.columns), rows, spec.note)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _printed(spec, width, True, monkeypatch) == _printed(spec, width, False, monkeypatch)


def test_a_plain_table_by_hand():
    """Columns as wide as their widest cell or header plus a space each side: `name` 4
    (header) and `2.50` 4, `GPUs` 4 and `128` 3, so 6 and 6 characters between borders."""
    console = Console(file=io.StringIO(), width=80)
    text = plain_table(console, "T", ["name", "GPUs"], [["a", "128"], ["2.50", "8"]], "n")
    assert text == "\n".join(
        [
            "T",
            "┏━━━━━━┳━━━━━━┓",
            "┃ name ┃ GPUs ┃",
            "┡━━━━━━╇━━━━━━┩",
            "│ a    │ 128  │",
            "│ 2.50 │ 8    │",
            "└──────┴──────┘",
            "n",
        ]
    )


def test_rich_draws_what_would_wrap_or_carry_style():
    wide = Console(file=io.StringIO(), width=20)
    assert plain_table(wide, "T", ["a" * 10, "b" * 10], [], "") is None  # 27 > 20 wide
    plain = Console(file=io.StringIO(), width=80)
    assert plain_table(plain, "T", ["a"], [["two  spaces"]], "") is None
    assert plain_table(plain, "T", ["a"], [["é"]], "") is None
    assert plain_table(plain, "T", ["a"], [["line\nbreak"]], "") is None
    coloured = Console(file=io.StringIO(), width=80, force_terminal=True)
    assert plain_table(coloured, "T", ["a"], [["1"]], "") is None


@pytest.mark.parametrize("plain", [True, False])
def test_names_that_look_like_emoji_codes_or_markup_are_printed_as_written(plain, monkeypatch):
    """A workload called ":x:" or "[b]" is a name, not an emoji code or a style: both
    writers print its characters (rich, by default, turns ":x:" into an emoji, which the
    plain writer did not: hypothesis found the two disagreeing)."""
    spec = TableSpec(":fire: [b]title", (":x:", "[b]"), ((":thumbs_up:", "[/]"),), ":x: note")
    printed = _printed(spec, 80, plain, monkeypatch)
    for text in (":fire: [b]title", "│ :thumbs_up: │ [/] │", ":x: note", "a header line"):
        assert text in printed
    box_drawing = range(0x2500, 0x2580)
    assert all(c.isascii() or ord(c) in box_drawing for c in printed)
