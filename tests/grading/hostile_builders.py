"""Broken notebooks for the hostile corpus, built from the released notebook.

Each builder takes the released notebook (a dict) and the path to write, and
writes bytes a learner might really hand in.
"""
import copy
import json
from pathlib import Path

import nbformat
from nbformat import v3

from tests.grading.helpers import ASSIGNMENT, SAMPLES, with_answer

SOLUTION = (Path(__file__).resolve().parent / "hostile" / "solution.py").read_text()


def _solved(release):
    return with_answer(release, SOLUTION)


def _dump(nb):
    return json.dumps(nb, indent=1).encode()


def invalid_json(release):
    return b'{"cells": [{"cell_type": "code", "source": '


def truncated(release):
    data = _dump(_solved(release))
    return data[: len(data) // 2]


def not_utf8(release):
    return _dump(_solved(release)).replace(b"update_with_donate", b"update_with_\xff\xfe", 1)


def json_but_not_a_notebook(release):
    return b'["a", "list", "not", "a", "notebook"]'


def not_a_notebook(release):
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def empty_notebook(release):
    return nbformat.writes(nbformat.v4.new_notebook()).encode()


def nbformat_v3(release):
    cell = v3.new_code_cell(input=SOLUTION)
    nb = v3.new_notebook(worksheets=[v3.new_worksheet(cells=[cell])])
    return v3.nbjson.writes(nb).encode()


def no_nbgrader_metadata(release):
    nb = _solved(release)
    for cell in nb["cells"]:
        cell["metadata"].pop("nbgrader", None)
    return _dump(nb)


def duplicated_answer_cell(release):
    nb = copy.deepcopy(release)  # the stub stays; a second answer cell follows it
    answer = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == ASSIGNMENT)
    solved = copy.deepcopy(answer)
    solved["source"], solved["id"] = SOLUTION, "duplicate"
    nb["cells"].insert(nb["cells"].index(answer) + 1, solved)
    return _dump(nb)


def edited_test_cell(release):
    nb = with_answer(release, (SAMPLES / "wrong_arithmetic.py").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade"):
            cell["source"] = "print('all tests passed')"
    return _dump(nb)


def deleted_test_cells(release):
    nb = with_answer(release, (SAMPLES / "wrong_arithmetic.py").read_text())
    nb["cells"] = [c for c in nb["cells"] if not c["metadata"].get("nbgrader", {}).get("grade")]
    return _dump(nb)


def edited_self_check(release):
    nb = _solved(release)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "self_check":
            cell["source"] = "import os\nos._exit(0)"
    return _dump(nb)


def answer_cell_markdown(release):
    nb = _solved(release)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == ASSIGNMENT:
            cell["cell_type"] = "markdown"
            cell.pop("outputs", None), cell.pop("execution_count", None)
    return _dump(nb)


def huge_output(release):
    nb = _solved(release)
    answer = next(c for c in nb["cells"] if c["cell_type"] == "code")
    answer["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "y" * (8 * 2**20)}]
    return _dump(nb)


def oversized_code(release):
    nb = with_answer(release, SOLUTION + "# " + "z" * (21 * 2**20) + "\n")
    return _dump(nb)


def deeply_nested_json(release):
    return b'{"cells": [], "metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def list_as_grade_id(release):
    nb = _solved(release)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "self_check":
            cell["metadata"]["nbgrader"]["grade_id"] = ["self_check"]
    return _dump(nb)


def solution_in_new_cell(release):
    nb = copy.deepcopy(release)  # the stub stays; the learner's own cell follows it
    answer = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == ASSIGNMENT)
    nb["cells"].insert(nb["cells"].index(answer) + 1, {
        "cell_type": "code", "execution_count": None, "id": "learner-cell", "metadata": {},
        "outputs": [], "source": SOLUTION})
    return _dump(nb)


BUILDERS = {name: fn for name, fn in globals().items()
            if callable(fn) and not name.startswith("_") and fn.__module__ == __name__}
