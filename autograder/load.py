"""Step 1 of grading: turn what a learner handed in into code to run.

A submission is a notebook (``.ipynb``, as a learner hands it in or inside an
nbgrader ``submitted/<student>/<assignment>/`` tree) or a plain ``.py`` file,
read from disk (:func:`read`) or from bytes in hand (:func:`from_bytes`: the
grading service's stored notebook, parsed once, never written to a file).
Loading never runs learner code and never raises on bad input: problems are
returned as plain-words messages on the :class:`Submission`.
"""
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder import checks_table, exercises, learner_submit, notebook
from autograder.notebook import checksum as compute_checksum, is_grade, is_solution

# Saved outputs (images, long prints) are never graded, so they count toward
# no limit on what is graded: a notebook file up to MAX_FILE_BYTES is read and
# its outputs dropped; then up to MAX_SOURCE_BYTES of code is graded.
MAX_FILE_BYTES = 128 * 2**20
MAX_SOURCE_BYTES = 20 * 2**20
CLEAR_OUTPUTS = ("clear its outputs (JupyterLab: Edit > Clear Outputs of All Cells), "
                 "save, and hand it in again")


@dataclass
class Cell:
    """One block of learner code: ``label`` names it in feedback."""

    label: str
    source: str


@dataclass
class Submission:
    """What the grader needs to know about one hand-in.

    ``name`` is the file stem, or the student id in an nbgrader tree.
    ``unreadable`` is a message when nothing can be graded; ``attempted`` is
    False when the answer cell is still the released stub; ``notes`` are
    warnings worth showing (e.g. an edited read-only cell); ``sha256`` is the
    hex digest of the file's bytes (None when they could not be read);
    ``other_exercise`` names the exercise whose notebook this is, when it
    was handed in for another one (then ``unreadable`` says so).
    """

    name: str
    path: Path
    exercise: str
    cells: list[Cell] = field(default_factory=list)
    unreadable: str | None = None
    attempted: bool = True
    notes: list[str] = field(default_factory=list)
    sha256: str | None = None
    other_exercise: str | None = None


def find(paths):
    """Expand files and nbgrader trees into ``(name, path, assignment)`` triples.

    Returns ``(found, skipped)``; ``skipped`` lists ``(path, reason)``.
    In an nbgrader tree each ``submitted/<student>/<assignment>/<assignment>.ipynb``
    of a course exercise is graded, named ``<student>/<assignment>``: one result
    per learner and exercise, and nothing a learner puts in their own folder can
    be graded under another name or exercise. Elsewhere a file is named by its
    stem (``<folder>-<stem>`` when two stems clash; such a name has no ``/``) and
    ``assignment`` is None. Symbolic links are never followed.
    """
    found, skipped, names = [], [], set()
    for root in map(Path, paths):
        for path in _files(root, skipped):
            parts = path.parts
            if "submitted" in parts[:-1]:
                reason = _not_gradable_in_tree(path)
                name, assignment = "/".join(parts[-3:-1]), parts[-2]
                if reason is None and name in names:
                    reason = f"a second notebook for {parts[-3]}'s {assignment}"
                if reason:
                    skipped.append((path, reason))
                    continue
            else:
                name, assignment = path.stem, None
                if name in names:
                    name = f"{path.parent.name}-{path.stem}"
                while name in names:
                    name += "_"
            names.add(name)
            found.append((name, path, assignment))
    return found, skipped


def _not_gradable_in_tree(path):
    """Why ``path``, under a ``submitted`` folder, is not graded (None: it is)."""
    parts = path.parts
    if len(parts) < 4 or parts[-4] != "submitted" or path.name != f"{parts[-2]}.ipynb":
        return "not the assignment's notebook in an nbgrader tree"
    if parts[-2] not in exercises.names():
        return f"{parts[-2]} is not one of this course's exercises ({', '.join(exercises.names())})"
    return None


def _files(root, skipped):
    """Candidate files under ``root``; a symlinked file is kept (graded as
    unreadable, so its learner still gets a result), a symlinked folder is not."""
    if not root.is_dir() or root.is_symlink():
        return [root]
    files = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".ipynb", ".py") or ".ipynb_checkpoints" in path.parts:
            continue
        folders = [root / p for p in path.relative_to(root).parents if p != Path(".")]
        if any(folder.is_symlink() for folder in folders):
            skipped.append((path, "inside a symbolically linked folder"))
            continue
        files.append(path)
    return files


def read(name, path, assignment=None, exercise=None):
    """Read one submission file; see :class:`Submission`. Never raises on bad input."""
    path = Path(path)
    exercise = exercise or exercise_for(path, assignment)
    sub = Submission(name=name, path=path, exercise=exercise)
    try:
        _read(sub, path)
    except Exception as exc:  # a promise: bad input never crashes the class run
        sub.unreadable = f"notebook could not be read: {type(exc).__name__}"
    return sub


def from_bytes(name, raw, exercise, filename):
    """A submission from bytes in hand (``filename``'s suffix says notebook or ``.py``).

    What :func:`read` does after opening the file; never raises on bad input.
    """
    sub = Submission(name=name, path=Path(filename), exercise=exercise)
    try:
        _parse(sub, raw)
    except Exception as exc:  # a promise: bad input never crashes the class run
        sub.unreadable = f"notebook could not be read: {type(exc).__name__}"
    return sub


def _read(sub, path):
    if path.is_symlink():
        sub.unreadable = "the submission is a symbolic link; hand in the notebook itself"
        return
    try:
        size = path.stat().st_size
        raw = b"" if size > MAX_FILE_BYTES else path.read_bytes()  # too big: refused unread
    except OSError as exc:
        sub.unreadable = f"the file could not be opened: {exc.strerror}"
        return
    _parse(sub, raw, max(size, len(raw)))


def _parse(sub, raw, size=None):
    size = len(raw) if size is None else size
    if size > MAX_FILE_BYTES:
        sub.unreadable = (f"the file is {_mib(size)}, over the {_mib(MAX_FILE_BYTES)} limit for "
                          f"a notebook file (saved outputs count there): {CLEAR_OUTPUTS}")
        return
    sub.sha256 = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # editors on Windows add a BOM
    except UnicodeDecodeError as exc:
        sub.unreadable = f"notebook could not be read: it is not UTF-8 text (bad byte at position {exc.start})"
        return
    if sub.path.suffix == ".py":
        sub.cells = [Cell(label=sub.path.name, source=text)]
    else:
        _read_notebook(sub, text)
    code = sum(len(c.source.encode("utf-8", "replace")) for c in sub.cells)
    if code > MAX_SOURCE_BYTES and not sub.unreadable:
        sub.unreadable = (f"its code is {_mib(code)}, over the {_mib(MAX_SOURCE_BYTES)} limit "
                          "for the code that is graded (outputs do not count)")


def _mib(n):
    """Whole MiB, rounded up: a size just over a limit never reads as equal to it."""
    return f"{-(-n // 2**20)} MiB"


def exercise_for(path, assignment):
    for candidate in (assignment, path.stem, path.parent.name):
        if candidate in exercises.names():
            return candidate
    return exercises.names()[0]


def _read_notebook(sub, text):
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        sub.unreadable = (f"notebook could not be read: invalid JSON at line {exc.lineno}, "
                          f"column {exc.colno} ({exc.msg})")
        return
    except RecursionError:
        sub.unreadable = "notebook could not be read: its JSON is nested too deeply"
        return
    if not isinstance(raw, dict) or "cells" not in raw and "worksheets" not in raw:
        sub.unreadable = "notebook could not be read: the file is JSON but not a Jupyter notebook"
        return
    try:
        nb_cells = notebook.cells(raw)
    except Exception as exc:  # nbformat's converter raises many types for malformed notebooks
        sub.unreadable = f"notebook could not be read: {str(exc).splitlines()[0][:200]}"
        return
    sub.other_exercise = _answers_other_exercise(sub.exercise, nb_cells)
    if sub.other_exercise == FOREIGN:
        sub.unreadable = (f"this notebook is not the {sub.exercise} exercise's: it has nbgrader "
                          f"cells, but none of {sub.exercise}'s (was it another assignment's or "
                          f"another course's?); hand in {sub.exercise}.ipynb as released")
        return
    if sub.other_exercise:
        sub.unreadable = (f"this is the notebook of the exercise {sub.other_exercise}, handed in "
                          f"for {sub.exercise}: hand in {sub.exercise}.ipynb for {sub.exercise}, "
                          f"and this notebook for {sub.other_exercise}")
        return
    sub.cells, answers = _code_cells(sub, nb_cells)
    if not sub.cells:
        sub.unreadable = "; ".join(["the notebook has no code cells to run"] + sub.notes)
    elif answers and all(_unchanged(c) for c in answers) and not any(
            c["cell_type"] == "code" and not _meta(c) and c["source"].strip() for c in nb_cells):
        sub.attempted = False  # the stub, and no code of the learner's own anywhere


FOREIGN = "another assignment"  # Submission.other_exercise of a notebook of no exercise here


def _answers_other_exercise(exercise, nb_cells):
    """The exercise whose answer cell this notebook holds, if not ``exercise`` (else None);
    :data:`FOREIGN` when it has nbgrader cells and none of ``exercise``'s or any other
    exercise's answer cell (an assignment of another course).

    Each exercise's answer cell has the exercise's name as its nbgrader grade_id.
    """
    ids = {i for i in (_meta(c).get("grade_id") for c in nb_cells) if isinstance(i, str)}
    if exercise in ids or not ids:
        return None
    other = next((other for other in exercises.names() if other in ids), None)
    if other is None and not ids & set(instructor_cells(exercise)):
        return FOREIGN
    return other


def _code_cells(sub, nb_cells):
    """The cells to run, with read-only cells taken from the instructor's copy.

    nbgrader restores locked cells before autograding (its OverwriteCells
    step); this does the same, and notes each edited or deleted one.
    """
    locked = instructor_cells(sub.exercise)
    code, answers, seen, edited, after_answer = [], [], set(), [], False
    for index, cell in enumerate(nb_cells, start=1):
        grade_id = _meta(cell).get("grade_id")
        if isinstance(grade_id, str) and grade_id in locked:
            seen.add(grade_id)
            original = locked[grade_id]
            if _edited(cell, original):
                edited.append(grade_id)
            # Read-only code before the answer is set-up the answer may need;
            # after it come self-checks and submit cells, which grading skips.
            if original["cell_type"] == "code" and not _is_test_cell(original) and not after_answer:
                code.append(Cell(label=f"read-only cell {index}", source=original["source"]))
            continue
        if _meta(cell).get("solution"):
            after_answer = True  # even if the answer cell was turned into markdown
        if cell["cell_type"] != "code":
            continue
        if _is_test_cell(cell):
            continue  # graded cells belong to the instructor; the grader runs its own tests
        label = "the answer cell" if _is_solution(cell) else f"cell {index}"
        code.append(Cell(label=label, source=cell["source"]))
        if _is_solution(cell):
            answers.append(cell)
    deleted = sorted(set(locked) - seen) if any(_meta(c) for c in nb_cells) else []
    for cells, what in ((edited, "edited"), (deleted, "deleted")):
        if cells:
            sub.notes.append(f"read-only cells were {what} ({', '.join(cells)}); "
                             "grading used the instructor's copy")
    if not code and any(_meta(c).get("solution") for c in nb_cells):
        sub.notes.append("the answer cell is not a code cell (was it changed to Markdown?)")
    return code, answers


@functools.cache
def instructor_cells(exercise):
    """Locked cells of the instructor's notebook, by nbgrader grade_id: the source
    notebook's, and the checks table and submit cells nbgrader adds at release (as its
    gradebook has them)."""
    path = exercises.get(exercise).source
    try:
        nb_cells = notebook.cells(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError):
        return {}
    added = [checks_table.notebook_cell(exercise), *learner_submit.submit_cells(exercise)]  # at release
    nb_cells += notebook.cells({"nbformat": 4, "cells": added})
    return {_meta(c)["grade_id"]: c for c in nb_cells
            if _meta(c).get("locked") and not _meta(c).get("solution")}


def _edited(cell, original):
    """True when a read-only cell differs from what was released."""
    if cell["cell_type"] != original["cell_type"]:
        return True
    checksum = _meta(cell).get("checksum")
    if checksum:
        try:
            return compute_checksum(cell) != checksum
        except Exception:
            return True
    if _is_test_cell(original):
        return False  # no checksum to compare: hidden parts differ by design
    return cell["source"] != original["source"]


_meta = notebook.nbgrader_meta


def _is_solution(cell):
    return bool(_meta(cell)) and is_solution(cell)


def _is_test_cell(cell):
    return bool(_meta(cell)) and is_grade(cell) and not is_solution(cell)


def _unchanged(cell):
    """True when an answer cell is still nbgrader's released stub."""
    checksum = _meta(cell).get("checksum")
    if checksum:
        try:
            return compute_checksum(cell) == checksum
        except Exception:
            return False
    return "raise NotImplementedError()" in cell["source"] and "YOUR CODE HERE" in cell["source"]
