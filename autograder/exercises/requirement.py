"""The row type of a task's requirements, :class:`Requirement`.

Each exercise's ``requirements.py`` lists the rows of its task as ``REQUIREMENTS``, a
tuple of :class:`Requirement`; :mod:`autograder.requirements` loads them (the points a
row is worth, the rows a check grades, what is wrong with a table). The type lives here,
a module both import, so an exercise's rows (data) never import the module that loads
them. Standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Requirement:
    """One requirement of a task statement.

    ``id``: a short slug (``donate-state``), what ``expected.json`` names;
    ``title``: a few words learners see beside the checks and in feedback;
    ``says``: the task's sentence, Markdown, one line;
    ``checks``: names of the hidden tests (``test_...``) that grade it.
    """

    id: str
    title: str
    says: str
    checks: tuple[str, ...]
