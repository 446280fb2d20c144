"""An exercise's graded checks, as learners read them: from its hidden tests.

Each hidden test carries its title and points (``@graded``) and, as its
docstring's first paragraph, one line saying what it checks; the task's
requirement rows (:mod:`autograder.requirements`) name the checks that grade each.
This module turns both into the tables the exercise page
(``book/_ext/graded_checks.py``) and the released notebook
(:mod:`autograder.nbgrader_release`) show, so neither lists a check, a point or a
requirement by hand.
"""
from __future__ import annotations

import inspect

from autograder import requirements
from autograder.judge import hidden_module, hidden_tests

GRADE_ID = "graded_checks"  # the released notebook's cell holding the table


def statement(fn) -> str:
    """The first paragraph of a hidden test's docstring, on one line.
    Raises ValueError when the test has none (a check learners could not read)."""
    doc = inspect.getdoc(fn) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    if not first:
        raise ValueError(f"hidden test {fn.__name__} has no docstring saying what it checks")
    return first


def check_rows(exercise: str) -> list[dict]:
    """``[{"name", "title", "points", "checks"}]`` of ``exercise``'s hidden tests, in
    file order (``points`` an int). Raises ValueError as :func:`statement` does."""
    module = hidden_module(exercise)
    return [{"name": name, "title": title, "points": points, "checks": statement(getattr(module, name))}
            for name, title, points in hidden_tests(exercise)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def requirement_rows(exercise: str) -> list[dict]:
    """``[{"id", "title", "says", "checks", "points"}]`` of ``exercise``'s requirement rows,
    in the task's order (``checks`` the titles of the hidden tests that grade the row,
    ``points`` what an answer violating it alone loses); empty when the exercise has no
    table yet."""
    try:
        rows = requirements.of(exercise)
    except ModuleNotFoundError as exc:
        if exc.name != f"autograder.exercises.{exercise}.requirements":
            raise
        return []
    titles = {name: title for name, title, _ in hidden_tests(exercise)}
    return [{"id": r.id, "title": r.title, "says": r.says, "checks": [titles[c] for c in r.checks],
             "points": requirements.points(exercise, r)} for r in rows]


def requirements_markdown(exercise: str) -> str:
    """The requirement rows as a Markdown table (Requirement, The task says, Graded by,
    Points), or '' when the exercise has none."""
    rows = requirement_rows(exercise)
    if not rows:
        return ""
    lines = ["| Requirement | The task says | Graded by | Points |", "| --- | --- | --- | --- |"]
    lines += [f"| {_cell(r['title'])} | {_cell(r['says'])} | {_cell('; '.join(r['checks']))} | {r['points']} |"
              for r in rows]
    return ("\n".join(lines) + "\n\nAn answer that violates one requirement and nothing else "
            "loses that requirement's points: the points of the checks that grade it. A check "
            "can grade several requirements, so these points add up to more than the total.\n\n")


def checks_markdown(exercise: str) -> str:
    """The checks as a Markdown table (Check, Points, Passes when) and their total."""
    rows = check_rows(exercise)
    lines = ["| Check | Points | Passes when |", "| --- | --- | --- |"]
    lines += [f"| {_cell(r['title'])} | {r['points']} | {_cell(r['checks'])} |" for r in rows]
    total = sum(r["points"] for r in rows)
    return "\n".join(lines) + f"\n\n{len(rows)} checks, {total} points in all.\n"


def markdown(exercise: str) -> str:
    """The requirement rows' table (when the exercise has one), then the checks' table."""
    return requirements_markdown(exercise) + checks_markdown(exercise)


def notebook_cell(exercise: str) -> dict:
    """The released notebook's read-only Markdown cell with the table (nbformat 4)."""
    meta = {"grade": False, "grade_id": GRADE_ID, "locked": True, "schema_version": 3,
            "solution": False, "task": False}
    return {"cell_type": "markdown", "id": GRADE_ID.replace("_", "-"), "metadata": {"nbgrader": meta},
            "source": "### The graded checks\n\n" + markdown(exercise)}
