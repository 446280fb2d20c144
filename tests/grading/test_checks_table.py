"""Each exercise's graded checks come from its hidden tests (autograder/checks_table.py):
the page's table (book/_ext/graded_checks.py) and the released notebook's cell
(autograder/nbgrader_release.py) list exactly the hidden tests, with their titles,
points and one-line statements. Fast: no site build; the released course is the session's."""
from __future__ import annotations

import re

import pytest

from autograder import checks_table, exercises
from autograder.judge import hidden_tests
from tests.course import REPO
from tests.grading.helpers import released_notebook

NAMES = list(exercises.names())


@pytest.mark.parametrize("exercise", NAMES)
def test_the_table_lists_every_hidden_test_with_its_points_and_statement(exercise):
    rows = checks_table.check_rows(exercise)
    assert [(r["name"], r["title"], r["points"]) for r in rows] == hidden_tests(exercise)
    assert all(r["checks"] and "\n" not in r["checks"] for r in rows)
    table = checks_table.checks_markdown(exercise)
    assert table.count("\n| ") == len(rows) + 1  # the separator line, then one per check
    assert table in checks_table.markdown(exercise)
    assert f"{sum(r['points'] for r in rows)} points in all" in table
    assert sum(r["points"] for r in rows) == exercises.get(exercise).points


@pytest.mark.parametrize("exercise", NAMES)
def test_every_requirement_row_is_shown_with_its_sentence_checks_and_points(exercise):
    from autograder import requirements

    try:
        rows = requirements.of(exercise)
    except ModuleNotFoundError:
        pytest.skip(f"{exercise} has no requirement table yet (test_requirements.py says so)")
    titles = {name: title for name, title, _ in hidden_tests(exercise)}
    table = checks_table.markdown(exercise)
    assert table.startswith(checks_table.requirements_markdown(exercise))
    for row in rows:
        line = next(line for line in table.splitlines() if line.startswith(f"| {row.title} |"))
        assert row.says.replace("|", "\\|") in line
        assert all(titles[c] in line for c in row.checks)
        assert line.endswith(f"| {requirements.points(exercise, row)} |")


def test_a_hidden_test_without_a_statement_is_refused():
    def test_silent(obs):
        pass

    with pytest.raises(ValueError, match="test_silent has no docstring"):
        checks_table.statement(test_silent)


@pytest.mark.parametrize("exercise", NAMES)
def test_the_page_shows_the_generated_table_and_types_none(exercise):
    page = (REPO / "book" / "exercises" / f"{exercise}.md").read_text(encoding="utf-8")
    assert f"```{{graded-checks}} {exercise}\n```" in page
    assert "| Points |" not in page, "a checks table typed by hand"


@pytest.mark.parametrize("exercise", NAMES)
def test_the_released_notebook_has_the_table_after_the_task(released_course, exercise):
    cells = released_notebook(released_course, exercise)["cells"]
    table = cells[1]
    assert table["metadata"]["nbgrader"]["grade_id"] == checks_table.GRADE_ID
    assert "".join(table["source"]) == checks_table.notebook_cell(exercise)["source"]
    task = "".join(cells[0]["source"])
    assert not re.search(r"\[\d\];?\n", task), "the task statement lists checks with points by hand"
