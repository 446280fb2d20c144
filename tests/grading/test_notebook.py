"""The grader's fast notebook reading agrees with nbformat and nbgrader."""
import json

import nbformat
from nbgrader.utils import compute_checksum, is_grade, is_locked, is_solution

from autograder import notebook
from tests.course import REPO


def _notebooks(course):
    for path in sorted((REPO / "exercises" / "source").glob("*/*.ipynb")):
        yield path.read_text()
    for path in sorted((course / "release").glob("*/*.ipynb")):
        yield path.read_text()


def test_cells_and_checksums_match_nbgrader(released_course):
    checked = 0
    for text in _notebooks(released_course):
        ours = notebook.cells(json.loads(text))
        theirs = nbformat.reads(text, as_version=4).cells
        assert [c["source"] for c in ours] == [c.source for c in theirs]
        for mine, cell in zip(ours, theirs):
            if "nbgrader" not in cell.metadata:
                continue
            assert (notebook.is_grade(mine), notebook.is_solution(mine), notebook.is_locked(mine)) == (
                is_grade(cell), is_solution(cell), is_locked(cell))
            assert notebook.checksum(mine) == compute_checksum(cell)
            checked += 1
    assert checked > 20


def test_older_notebook_versions_are_converted():
    v3 = nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(
        cells=[nbformat.v3.new_code_cell(input="x = 1")])])
    cells = notebook.cells(json.loads(nbformat.v3.nbjson.writes(v3)))
    assert [(c["cell_type"], c["source"]) for c in cells] == [("code", "x = 1")]
