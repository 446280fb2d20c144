"""What ``nbgrader generate_assignment`` adds to every exercise: the table of its
graded checks, the submit cells, and the way to them.

The table is made from the hidden tests (:func:`autograder.checks_table.notebook_cell`)
and put right after the task statement; the submit cells are written once
(:func:`autograder.learner_submit.submit_cells`). :class:`AddSubmitCells`, listed in
exercises/nbgrader_config.py right after nbgrader's own ``IncludeHeaderFooter``,
adds both to each notebook as it is released, and tags the exercise's code cells
``raises-exception`` so that Run All reaches the submit cells past an answer that
fails its self-check. Running before ``LockCells``, ``ComputeChecksums`` and ``SaveCells``,
they are read-only cells with checksums like every other locked cell, and the
gradebook holds them, so ``nbgrader validate`` and ``nbgrader autograde``
treat them as if they were in the source notebook.
"""
import re

from nbformat import from_dict
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import IncludeHeaderFooter, NbGraderPreprocessor

from autograder import checks_table, exercises, learner_submit

RUN_PAST = "raises-exception"  # the cell tag JupyterLab and nbclient run past
GRADED_LINE = re.compile(r"^# Graded \([0-9.]+ points?\):", re.MULTILINE)  # a graded cell's first line


class AddSubmitCells(NbGraderPreprocessor):
    """Insert the exercise's checks table after its first cell (the task statement),
    tag every code cell :data:`RUN_PAST`, and append its submit cells (the exercise
    is the nbgrader assignment). Each graded cell's points are set to its hidden
    test's: the hidden tests are the course's one points table, so the gradebook a
    release writes (``SaveCells``) never goes back to points a source notebook
    still says.

    A self-check raises on a wrong answer, by design: the learner reads why, and
    ``nbgrader validate`` reports it. Without the tag that error also makes the
    kernel drop every cell Run All queued after it, the submit cell among them;
    with it JupyterLab (and nbclient) ask the kernel not to stop on the error. The
    error is still shown, and nbgrader, which runs notebooks with errors allowed
    anyway, judges the notebook as before.
    """

    def preprocess(self, nb, resources):
        exercise = resources["nbgrader"]["assignment"]
        points = {name: p for name, _, p in exercises.get(exercise).tests()}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and meta.get("grade_id") in points:
                meta["points"] = points[meta["grade_id"]]  # the course's table, not the copy
                cell.source = GRADED_LINE.sub(_graded_words(points[meta["grade_id"]]), cell.source,
                                              count=1)
            tags = cell.metadata.get("tags", [])
            if cell.cell_type == "code" and RUN_PAST not in tags:
                cell.metadata["tags"] = [*tags, RUN_PAST]
        nb.cells.insert(1, from_dict(checks_table.notebook_cell(exercise)))
        nb.cells.extend(from_dict(learner_submit.submit_cells(exercise)))
        return nb, resources


def _graded_words(points):
    return f"# Graded ({points:g} point{'' if points == 1 else 's'}):"


def release_preprocessors():
    """nbgrader's own ``GenerateAssignment.preprocessors``, in its order, with
    :class:`AddSubmitCells` right after ``IncludeHeaderFooter``."""
    defaults = list(GenerateAssignment.class_traits()["preprocessors"].default())
    at = defaults.index(IncludeHeaderFooter) + 1
    return [*defaults[:at], AddSubmitCells, *defaults[at:]]
