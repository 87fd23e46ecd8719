"""README's picture of the console: the text of the 80x24 console snapshot, so it cannot go
stale.

The picture in README.md was drawn by hand and fell behind the console (column names, the
``x`` key, the refresh key).  It is now the text of
``tests/tui/__snapshots__/test_snapshots/test_console[80x24].svg``, the snapshot
``tests/tui/test_snapshots.py::test_console`` compares the console with: the demo cluster
(seed 42) as alice, 80 columns by 24 rows.  ``python -m tests.readme_picture`` writes it into
README.md between the two ``console picture`` markers; ``tests/test_readme_picture.py``
fails when README's copy differs from the snapshot's.  After a deliberate change to the
console: update the snapshots (``--snapshot-update``), look at them, then run this.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.app_screen import svg_text

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SNAPSHOT = ROOT / "tests/tui/__snapshots__/test_snapshots/test_console[80x24].svg"
BEGIN = "<!-- console picture: begin (python -m tests.readme_picture writes it) -->"
END = "<!-- console picture: end -->"


def picture() -> str:
    """The snapshot's 24 rows, trailing blanks removed, in a fenced block."""
    rows = svg_text(SNAPSHOT.read_text(), 80, 24).splitlines()
    return "```\n" + "\n".join(row.rstrip() for row in rows) + "\n```"


def with_picture(readme: str) -> str:
    """README's text with the picture between the markers replaced by the current one."""
    head, begin, rest = readme.partition(BEGIN)
    _old, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"README.md has no '{BEGIN}' ... '{END}' pair")
    return f"{head}{BEGIN}\n{picture()}\n{END}{tail}"


def main() -> int:
    text = README.read_text()
    new = with_picture(text)
    if new != text:
        README.write_text(new)
        print("README.md: console picture updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
