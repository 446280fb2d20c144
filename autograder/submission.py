"""Step 1 of grading: turn what a learner handed in into code to run.

A submission is a notebook (``.ipynb``, as a learner hands it in or inside an
nbgrader ``submitted/<student>/<assignment>/`` tree) or a plain ``.py`` file.
Loading never runs learner code and never raises on bad input: problems are
returned as plain-words messages on the :class:`Submission`.
"""
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder import notebook
from autograder.notebook import checksum as compute_checksum
from autograder.notebook import is_grade, is_solution

SOURCE = Path(__file__).resolve().parent.parent / "exercises" / "source"
EXERCISES = ("update_with_donate", "donation_report", "fix_training_loop")
MAX_BYTES = 20 * 2**20  # a notebook bigger than this is refused unread


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
    warnings worth showing (e.g. an edited read-only cell).
    """

    name: str
    path: Path
    exercise: str
    cells: list = field(default_factory=list)
    unreadable: str = None
    attempted: bool = True
    notes: list = field(default_factory=list)


def find(paths):
    """Expand files and nbgrader trees into ``(name, path, assignment)`` triples.

    A directory is searched for ``*.ipynb`` and ``*.py``; a path of the form
    ``.../<student>/<assignment>/<notebook>.ipynb`` inside a folder named
    ``submitted`` is named after the student.
    """
    found = []
    for root in map(Path, paths):
        files = sorted(p for p in root.rglob("*") if p.suffix in (".ipynb", ".py")
                       and ".ipynb_checkpoints" not in p.parts) if root.is_dir() else [root]
        for path in files:
            parts = path.parts
            if "submitted" in parts[:-3] or (len(parts) >= 4 and parts[-4] == "submitted"):
                found.append((parts[-3], path, parts[-2]))
            else:
                found.append((path.stem, path, None))
    return found


def load(name, path, assignment=None, exercise=None):
    """Read one submission; see :class:`Submission`. Never raises on bad input."""
    path = Path(path)
    exercise = exercise or exercise_for(path, assignment)
    sub = Submission(name=name, path=path, exercise=exercise)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        sub.unreadable = f"the file could not be opened: {exc.strerror}"
        return sub
    if len(raw) > MAX_BYTES:
        sub.unreadable = f"the file is {len(raw) // 2**20} MiB, over the {MAX_BYTES // 2**20} MiB limit"
        return sub
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        sub.unreadable = f"notebook could not be read: it is not UTF-8 text (bad byte at position {exc.start})"
        return sub
    if path.suffix == ".py":
        sub.cells = [Cell(label=path.name, source=text)]
        return sub
    _read_notebook(sub, text)
    return sub


def exercise_for(path, assignment):
    for candidate in (assignment, path.stem, path.parent.name):
        if candidate in EXERCISES:
            return candidate
    return EXERCISES[0]


def _read_notebook(sub, text):
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        sub.unreadable = f"notebook could not be read: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})"
        return
    if not isinstance(raw, dict) or "cells" not in raw and "worksheets" not in raw:
        sub.unreadable = "notebook could not be read: the file is JSON but not a Jupyter notebook"
        return
    try:
        nb_cells = notebook.cells(raw)
    except Exception as exc:  # nbformat's converter raises many types for malformed notebooks
        sub.unreadable = f"notebook could not be read: {str(exc).splitlines()[0][:200]}"
        return
    sub.cells, answers = _code_cells(sub, nb_cells)
    if not sub.cells:
        sub.unreadable = "; ".join(["the notebook has no code cells to run"] + sub.notes)
    elif answers and all(_unchanged(c) for c in answers):
        sub.attempted = False


def _code_cells(sub, nb_cells):
    """The cells to run, with read-only cells taken from the instructor's copy.

    nbgrader restores locked cells before autograding (its OverwriteCells
    step); this does the same, and notes each edited or deleted one.
    """
    locked = instructor_cells(sub.exercise)
    code, answers, seen, edited, after_answer = [], [], set(), [], False
    for index, cell in enumerate(nb_cells, start=1):
        grade_id = _meta(cell).get("grade_id")
        if grade_id in locked:
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


@functools.lru_cache(maxsize=None)
def instructor_cells(exercise):
    """Locked cells of the instructor's source notebook, by nbgrader grade_id."""
    path = SOURCE / exercise / f"{exercise}.ipynb"
    try:
        nb_cells = notebook.cells(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError):
        return {}
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
