"""Sphinx extension: each exercise page's table of graded checks, from its hidden tests.

An exercise page writes

    ```{graded-checks} <exercise>
    ```

and gets, in its place, the tables :mod:`autograder.checks_table` makes from
``autograder/exercises/<exercise>/requirements.py`` (each requirement of the task
with the checks that grade it and its points) and ``hidden/tests.py`` (each check's
title, points and one-line statement), so the page cannot list a requirement or a
check the grader does not grade. The page is rebuilt whenever either file changes
(a Sphinx dependency).
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from autograder.defaults import CHECKOUT as REPO

MARKER = re.compile(r"^```\{graded-checks\}[ \t]+(?P<exercise>\w+)[ \t]*\n```[ \t]*$", re.M)


def _table(app: Sphinx, docname: str, match: re.Match) -> str:
    from autograder import checks_table, exercises

    name = match["exercise"]
    if name not in exercises.names():
        raise ExtensionError(f"{docname}: graded-checks names no exercise: {name!r}")
    folder = REPO / "autograder" / "exercises" / name
    app.env.note_dependency(str(folder / "hidden" / "tests.py"))
    if (folder / "requirements.py").exists():
        app.env.note_dependency(str(folder / "requirements.py"))
    return checks_table.markdown(name)


def render(app: Sphinx, docname: str, source: list[str]) -> None:
    source[0] = MARKER.sub(lambda m: _table(app, docname, m), source[0])


def setup(app: Sphinx) -> dict:
    app.connect("source-read", render)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
