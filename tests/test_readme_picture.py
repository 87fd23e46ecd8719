"""README's console picture is the 80x24 console snapshot's text (``tests/readme_picture.py``).

Fails when the console changed (its snapshot was updated) and README's copy was not
regenerated with ``python -m tests.readme_picture``.
"""

from __future__ import annotations

from tests.readme_picture import BEGIN, END, README, picture, with_picture


def test_readme_shows_the_current_console_snapshot() -> None:
    text = README.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert with_picture(text) == text, "stale: run python -m tests.readme_picture"
    shown = picture().splitlines()
    assert len(shown) == 24 + 2 and max(len(row) for row in shown) <= 80
    # What the old hand-drawn picture got wrong: the console's own column names and keys.
    assert "JobID" in picture() and "Checkpoint" in picture() and "x Check" in picture()
