"""Step 1 of grading, in-process (``autograder/load.py``): a hand-in, a notebook or a
``.py`` file, read into a :class:`~autograder.load.Submission` (the cells to run, the
exercise, and why it cannot be graded), never running learner code and never raising.
The end-to-end words a learner reads for these cases: tests/grading/test_messages.py."""
import hashlib
import json

from autograder import load
from tests.course import REPO
from tests.grading.helpers import ASSIGNMENT, SAMPLES, released_notebook, samples_dir, with_answer

OTHER = "fix_training_loop"  # an exercise whose notebook has read-only code before the answer


def _write(folder, name, notebook):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1))
    return path


def _grade_id(cell):
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def test_a_notebook_gives_the_answer_and_the_set_up_it_needs(released_course, tmp_path):
    """Read-only code before the answer runs as the instructor released it; the answer
    cell as the learner wrote it; the graded, self-check and submit cells not at all."""
    answer = (samples_dir(OTHER) / "as_given.py").read_text()
    nb = with_answer(released_notebook(released_course, OTHER), answer, OTHER)
    path = _write(tmp_path, f"{OTHER}.ipynb", nb)
    sub = load.read("ada", path)
    assert (sub.name, sub.exercise, sub.unreadable, sub.attempted, sub.notes) == \
        ("ada", OTHER, None, True, [])
    locked = load.instructor_cells(OTHER)
    index = {_grade_id(c): i for i, c in enumerate(nb["cells"], start=1)}
    assert [(c.label, c.source) for c in sub.cells] == [
        (f"read-only cell {index['setup']}", locked["setup"]["source"]),
        (f"read-only cell {index['given']}", locked["given"]["source"]),
        ("the answer cell", answer)]
    assert sub.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_python_file_is_one_cell(tmp_path):
    source = (SAMPLES / "reference.py").read_text()
    path = tmp_path / "ada.py"
    path.write_bytes(b"\xef\xbb\xbf" + source.encode())  # a Windows editor's byte-order mark
    sub = load.read("ada", path, exercise=ASSIGNMENT)
    assert [(c.label, c.source) for c in sub.cells] == [("ada.py", source)]
    assert (sub.unreadable, sub.attempted, sub.other_exercise) == (None, True, None)


def test_the_exercise_comes_from_the_tree_the_name_or_the_folder(tmp_path):
    """The nbgrader assignment, else the file's stem, else its folder, else the first
    exercise; an exercise given by the caller (the service's form) wins over all."""
    path = tmp_path / OTHER / "donation_report.py"
    path.parent.mkdir()
    path.write_text("x = 1\n")
    assert load.read("a", path, assignment="silent_donation").exercise == "silent_donation"
    assert load.read("a", path).exercise == "donation_report"
    assert load.read("a", path, exercise=ASSIGNMENT).exercise == ASSIGNMENT
    renamed = path.rename(path.with_name("mine.py"))
    assert load.read("a", renamed).exercise == OTHER
    (tmp_path / "elsewhere").mkdir()
    alone = renamed.rename(tmp_path / "elsewhere" / "mine.py")
    assert load.read("a", alone).exercise == ASSIGNMENT  # the first exercise


def test_the_released_stub_is_not_attempted(released_course, tmp_path):
    release = released_notebook(released_course)
    sub = load.read("ada", _write(tmp_path, "a.ipynb", release), exercise=ASSIGNMENT)
    assert (sub.attempted, sub.unreadable) == (False, None)
    # the stub left as it is, but code of the learner's own in a cell of their own
    mine = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": "def update_with_donate(state, delta):\n    return state + delta\n"}
    nb = {**release, "cells": [*release["cells"], mine]}
    sub = load.read("ada", _write(tmp_path, "b.ipynb", nb), exercise=ASSIGNMENT)
    assert sub.attempted and sub.cells[-1].source == mine["source"]


def test_what_cannot_be_read_says_why(tmp_path):
    def said(raw, suffix=".ipynb"):
        return load.from_bytes("ada", raw, ASSIGNMENT, f"ada{suffix}").unreadable

    assert said(b'{"cells": [\n  1,\n') == ("notebook could not be read: invalid JSON at line 3, "
                                           "column 1 (Expecting value)")
    assert said(b"[1, 2]") == "notebook could not be read: the file is JSON but not a Jupyter notebook"
    assert said(b"x = 1\n\xff\n", ".py").startswith("notebook could not be read: it is not UTF-8 "
                                                    "text (bad byte at position 6)")
    markdown = {"cell_type": "markdown", "metadata": {}, "source": "only words"}
    assert said(json.dumps({"cells": [markdown], "metadata": {}, "nbformat": 4,
                            "nbformat_minor": 5}).encode()) == "the notebook has no code cells to run"
    assert said(b'{"cells": 7, "nbformat": 4}').startswith("notebook could not be read: ")
    assert said(b"{" * 100_000 + b"}" * 100_000).startswith("notebook could not be read: ")


def test_a_symbolic_link_is_not_followed(tmp_path):
    link = tmp_path / "ada.ipynb"
    link.symlink_to(REPO / "exercises" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    sub = load.read("ada", link)
    assert sub.unreadable == "the submission is a symbolic link; hand in the notebook itself"
    assert (sub.cells, sub.sha256) == ([], None)


def test_a_notebook_of_another_exercise_is_named(released_course, tmp_path):
    path = _write(tmp_path, "x.ipynb", released_notebook(released_course, OTHER))
    sub = load.read("ada", path, exercise=ASSIGNMENT)
    assert sub.other_exercise == OTHER
    assert sub.unreadable.startswith(f"this is the notebook of the exercise {OTHER}, handed in "
                                     f"for {ASSIGNMENT}")
    assert sub.cells == [] and sub.attempted  # never called a stub


def test_a_notebook_of_another_course_is_foreign(tmp_path):
    cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "squares", "solution": True,
                                                           "grade": False, "locked": False}},
            "outputs": [], "execution_count": None, "source": "x = 1"}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    sub = load.read("ada", _write(tmp_path, "x.ipynb", nb), exercise=ASSIGNMENT)
    assert sub.other_exercise == load.FOREIGN
    assert sub.unreadable.startswith(f"this notebook is not the {ASSIGNMENT} exercise's")


def test_an_edited_or_deleted_read_only_cell_is_noted(released_course, tmp_path):
    """Grading runs the instructor's copy of a read-only cell (as nbgrader does) and says so."""
    nb = released_notebook(released_course, OTHER)
    given = next(c for c in nb["cells"] if _grade_id(c) == "given")
    given["source"] = "print('mine')"
    nb["cells"] = [c for c in nb["cells"] if _grade_id(c) != "self_check"]
    sub = load.read("ada", _write(tmp_path, "x.ipynb", nb), exercise=OTHER)
    assert sub.notes == ["read-only cells were edited (given); grading used the instructor's copy",
                         "read-only cells were deleted (self_check); grading used the instructor's copy"]
    assert load.instructor_cells(OTHER)["given"]["source"] in [c.source for c in sub.cells]
    assert "print('mine')" not in [c.source for c in sub.cells]


def test_an_answer_cell_turned_into_markdown_is_noted(released_course, tmp_path):
    nb = released_notebook(released_course)
    for cell in nb["cells"]:
        if _grade_id(cell) == ASSIGNMENT:
            cell["cell_type"] = "markdown"
            cell.pop("outputs"), cell.pop("execution_count")
    sub = load.read("ada", _write(tmp_path, "x.ipynb", nb), exercise=ASSIGNMENT)
    assert sub.unreadable == ("the notebook has no code cells to run; the answer cell is not a "
                              "code cell (was it changed to Markdown?)")


def test_the_size_limits(monkeypatch):
    """Outputs count only toward the file's limit; the code graded has a limit of its own."""
    source = {"cell_type": "code", "metadata": {}, "execution_count": None, "source": "x = 1\n",
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "y" * 3000}]}
    raw = json.dumps({"cells": [source], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 2000)
    big = load.from_bytes("ada", raw, ASSIGNMENT, "a.ipynb")
    assert big.unreadable.startswith("the file is 1 MiB, over the 1 MiB limit for a notebook file")
    assert load.CLEAR_OUTPUTS in big.unreadable
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 2**20)
    assert load.from_bytes("ada", raw, ASSIGNMENT, "a.ipynb").unreadable is None
    monkeypatch.setattr(load, "MAX_SOURCE_BYTES", 5)
    assert load.from_bytes("ada", raw, ASSIGNMENT, "a.ipynb").unreadable == (
        "its code is 1 MiB, over the 1 MiB limit for the code that is graded (outputs do not count)")


def test_loading_bytes_matches_loading_the_file(tmp_path):
    """The service grades its stored bytes as the command line grades the same file."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "x = 1"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    raw = (json.dumps(nb, indent=1) + "\n").encode()
    (tmp_path / f"{ASSIGNMENT}.ipynb").write_bytes(raw)
    from_file = load.read("ada", tmp_path / f"{ASSIGNMENT}.ipynb", None, ASSIGNMENT)
    in_hand = load.from_bytes("ada", raw, ASSIGNMENT, f"{ASSIGNMENT}.ipynb")
    assert (in_hand.cells, in_hand.sha256, in_hand.unreadable, in_hand.attempted) == \
        (from_file.cells, from_file.sha256, from_file.unreadable, from_file.attempted)
    assert load.from_bytes("ada", b"\xff", ASSIGNMENT, "a.ipynb").unreadable.startswith(
        "notebook could not be read: it is not UTF-8")


def test_nbgrader_tree_files_are_attributed_safely(tmp_path):
    """Only submitted/<student>/<a>/<a>.ipynb is graded, under that student only."""
    root = tmp_path / "submitted"
    own = root / "mallory" / "update_with_donate"
    nested = own / "x" / "bob" / "update_with_donate"
    nested.mkdir(parents=True)
    for path in (own / "update_with_donate.ipynb", own / "update_with_donate-Copy1.ipynb",
                 nested / "update_with_donate.ipynb"):
        path.write_text("{}")
    link = root / "eve" / "update_with_donate" / "update_with_donate.ipynb"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO / "exercises" / "source" / "update_with_donate" / "update_with_donate.ipynb")
    found, skipped = load.find([root])
    assert sorted(name for name, _, _ in found) == ["eve/update_with_donate",
                                                    "mallory/update_with_donate"]
    assert len(skipped) == 2
    eve = load.read(*next(f for f in found if f[0] == "eve/update_with_donate"))
    assert "symbolic link" in eve.unreadable
