"""The code a lesson shows, read from its MyST source: every shown line fits the
lesson column on a laptop (tests/browser/test_layout.py measures the column in
Chromium; this names the line to shorten)."""

from __future__ import annotations

import re

import pytest

from tests.book.sitebuild import LESSONS, REPO

# Characters of code that fit the lesson column at 1024 px and wider
# (book/_static/page-layout.css; the theme's code font).
COLUMN_CHARS = 84
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```", re.M | re.S)
HIDDEN = re.compile(r"^:tags:.*\b(remove-cell|remove-input)\b", re.M)


def shown_lines(text: str):
    """(line number, line) of every code line the page shows (not a hidden cell's)."""
    for cell in CODE_CELL.finditer(text):
        if HIDDEN.search(cell["body"]):
            continue
        first = text.count("\n", 0, cell.start("body")) + 1
        for offset, line in enumerate(cell["body"].splitlines()):
            if not line.startswith(":"):
                yield first + offset, line


def test_shown_lines_are_found_and_hidden_cells_skipped():
    text = ("```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\n"
            ":tags: [remove-cell]\nhidden = 2\n```\n\n```{code-cell} ipython3\ny = 3\n```\n")
    assert list(shown_lines(text)) == [(2, "x = 1"), (11, "y = 3")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_shown_code_fits_the_lesson_column(lesson):
    path = REPO / "book" / "lessons" / f"{lesson}.md"
    long = [f"{path.relative_to(REPO)}:{number}: {len(line)} characters"
            for number, line in shown_lines(path.read_text()) if len(line) > COLUMN_CHARS]
    assert not long, f"shown code lines longer than {COLUMN_CHARS} characters:\n" + "\n".join(long)
