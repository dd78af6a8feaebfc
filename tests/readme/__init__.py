"""The README's figures, each produced by the command the README shows beside it.

A figure in README.md that the tool produces sits under a marker line that names its check:

    <!-- check NAME: key=value; key=value -->
    the paragraph (up to the next blank line, or a whole fenced block) that quotes each value

    <!-- output NAME -->
    ```
    a fenced block holding exactly what the check renders of the command's output
    ```

NAME is a check in `tests/readme/checks.py`: the command a reader would type (shown in the
same README section) and a function that runs it in-process, through `cli.app.main` as the
`fleetplan` entry point does, or reads the golden file that `make test`'s `batch --check`
holds to the tool, and returns each figure formatted as the README prints it.

`tests/test_readme.py` checks every marker: NAME is a check, its keys are the check's keys,
each value is the figure the tool gives now and appears (as a whole token) in the text
under the marker, and the check's command is shown in the marker's section. Checks marked
slow (a figure that takes more than a few seconds of solving) are left to `make readme`.

    python -m tests.readme            # report every figure that differs (fast checks)
    python -m tests.readme --slow     # the slow checks too
    python -m tests.readme --write    # rewrite the markers, their figures and output blocks
"""
