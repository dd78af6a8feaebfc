"""`-h` text: a command's docstring reflowed so the terminal wraps it once."""

from cli.app import reflowed


def test_a_paragraph_becomes_one_line_and_lists_keep_their_items():
    text = """First line of the summary
    goes on here.

    A second paragraph
    wrapped in the source.
    - one item
      continued
    - another item
    """
    assert reflowed(text) == (
        "First line of the summary goes on here.\n\n"
        "A second paragraph wrapped in the source.\n"
        "- one item\n  continued\n- another item"
    )
    assert reflowed(None) is None and reflowed("") == ""


def test_the_sweep_help_has_no_break_inside_a_sentence():
    # the sweep's help broke after 'unless' where the docstring's source line ended
    from cli.app import load_command

    help_text = load_command("sweep").help
    assert "(the sweep resumes), unless its instance changed since" in help_text
