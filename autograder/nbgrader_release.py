"""What ``nbgrader generate_assignment`` adds to every exercise: the table of its
graded checks and the submit cells.

The table is made from the hidden tests (:func:`autograder.checks_table.notebook_cell`)
and put right after the task statement; the submit cells are written once
(:func:`autograder.learner_submit.cells`). :class:`AddSubmitCells`, listed in
exercises/nbgrader_config.py right after nbgrader's own ``IncludeHeaderFooter``,
adds both to each notebook as it is released. Running before ``LockCells``, ``ComputeChecksums`` and ``SaveCells``,
they are read-only cells with checksums like every other locked cell, and the
gradebook holds them, so ``nbgrader validate`` and ``nbgrader autograde``
treat them as if they were in the source notebook.
"""
from nbformat import from_dict
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import IncludeHeaderFooter, NbGraderPreprocessor

from autograder import checks_table, learner_submit


class AddSubmitCells(NbGraderPreprocessor):
    """Insert the exercise's checks table after its first cell (the task statement)
    and append its submit cells (the exercise is the nbgrader assignment)."""

    def preprocess(self, nb, resources):
        exercise = resources["nbgrader"]["assignment"]
        nb.cells.insert(1, from_dict(checks_table.notebook_cell(exercise)))
        nb.cells.extend(from_dict(learner_submit.cells(exercise)))
        return nb, resources


def release_preprocessors():
    """nbgrader's own ``GenerateAssignment.preprocessors``, in its order, with
    :class:`AddSubmitCells` right after ``IncludeHeaderFooter``."""
    defaults = list(GenerateAssignment.class_traits()["preprocessors"].default())
    at = defaults.index(IncludeHeaderFooter) + 1
    return [*defaults[:at], AddSubmitCells, *defaults[at:]]
