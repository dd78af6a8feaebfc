"""`python -m tests.readme [--slow] [--write]`: check (or rewrite) the README's figures."""

from __future__ import annotations

import argparse
import sys

from tests.readme.checks import CHECKS
from tests.readme.markers import find_markers
from tests.readme.runner import Runner
from tests.readme.verdicts import README, problems, unused_checks, write


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.readme", description=__doc__)
    parser.add_argument("--slow", action="store_true", help="run the slow checks too")
    parser.add_argument("--write", action="store_true", help="rewrite README.md from the tool")
    args = parser.parse_args()
    text = README.read_text()
    run = Runner()
    if args.write:
        new, left = write(text, run, args.slow)
        if new != text:
            README.write_text(new)
            print("README.md rewritten: review `git diff README.md`")
        for line in left:
            print(f"mend by hand: {line}")
        text = new
    found = [f"unused check: {name}" for name in unused_checks(text)]
    for marker in find_markers(text):
        check = CHECKS.get(marker.name)
        if check is not None and check.slow and not args.slow:
            continue
        found.extend(problems(text, marker, run))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
