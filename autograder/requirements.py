"""What each exercise's task asks for, as rows a grade is made of.

An exercise lists the requirements of its task statement in
``autograder/exercises/<exercise>/requirements.py`` as ``REQUIREMENTS``, a tuple of
:class:`~autograder.exercises.requirement.Requirement` (a module of its own, which the
rows import, so they never import this module that loads them): one row per sentence of the task that asks for something
(what to donate, what to keep, what to return for each named input, what to read,
what memory must be saved). A row's ``checks`` are the hidden tests that fail
when an answer violates that row and nothing else, so the row is worth exactly
their points (:func:`points`); a check may belong to several rows (a check that
cannot run without another row's evidence says "not checked" and belongs to both).

The rows are public (they restate the task); the exercise page and the released
notebook render them with their checks and points (:mod:`autograder.checks_table`).
Each row has sample answers in ``hidden/samples/`` that violate it alone
(``expected.json``: ``"violates": "<row id>"``) and must lose exactly its points;
``tests/grading/test_requirements.py`` holds every exercise to that.
"""
from __future__ import annotations

import importlib

from autograder import exercises
from autograder.exercises.requirement import Requirement

__all__ = ["Requirement", "of", "points", "rows_of_check", "problems"]


def of(exercise: str) -> tuple[Requirement, ...]:
    """``exercise``'s requirement rows, in the task's order.

    Raises ValueError for an unknown exercise (:func:`autograder.exercises.get`)
    and ModuleNotFoundError when it has no ``requirements.py``."""
    exercises.get(exercise)
    module = importlib.import_module(f"autograder.exercises.{exercise}.requirements")
    return tuple(module.REQUIREMENTS)


def _check_points(exercise: str) -> dict[str, int]:
    return {name: pts for name, _, pts in exercises.get(exercise).tests()}


def points(exercise: str, row: Requirement) -> int:
    """The points an answer that violates ``row`` alone loses: its checks' sum."""
    table = _check_points(exercise)
    return sum(table[c] for c in row.checks)


def rows_of_check(exercise: str, check: str) -> list[Requirement]:
    """The rows ``check`` grades (usually one)."""
    return [row for row in of(exercise) if check in row.checks]


def problems(exercise: str) -> list[str]:
    """What is wrong with ``exercise``'s table, in words (empty when nothing is):
    a duplicate id, a check no hidden test defines, a hidden test in no row."""
    rows = of(exercise)
    table = _check_points(exercise)
    found = []
    ids = [row.id for row in rows]
    found += [f"requirement id {i!r} appears twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for row in rows:
        if not row.checks:
            found.append(f"requirement {row.id!r} names no check")
        found += [f"requirement {row.id!r} names {c!r}, which no hidden test defines"
                  for c in row.checks if c not in table]
        if not row.title or not row.says or "\n" in row.says:
            found.append(f"requirement {row.id!r} needs a title and a one-line sentence")
    covered = {c for row in rows for c in row.checks}
    found += [f"hidden test {c!r} grades no requirement" for c in table if c not in covered]
    return found
