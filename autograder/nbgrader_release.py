"""What ``nbgrader generate_assignment`` adds to every exercise: the submit cells,
and the way to them.

The submit cells are written once (:func:`autograder.learner_submit.cells`);
:class:`AddSubmitCells`, listed in exercises/nbgrader_config.py right after
nbgrader's own ``IncludeHeaderFooter``, appends them to each notebook as it is
released, and tags the exercise's code cells ``raises-exception`` so that Run
All reaches them past an answer that fails its self-check. Running before ``LockCells``, ``ComputeChecksums`` and ``SaveCells``,
they are read-only cells with checksums like every other locked cell, and the
gradebook holds them, so ``nbgrader validate`` and ``nbgrader autograde``
treat them as if they were in the source notebook.
"""
from nbformat import from_dict
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import IncludeHeaderFooter, NbGraderPreprocessor

from autograder import learner_submit


RUN_PAST = "raises-exception"  # the cell tag JupyterLab and nbclient run past


class AddSubmitCells(NbGraderPreprocessor):
    """Append the exercise's submit cells (the exercise is the nbgrader assignment),
    and tag every code cell before them :data:`RUN_PAST`.

    A self-check raises on a wrong answer, by design: the learner reads why, and
    ``nbgrader validate`` reports it. Without the tag that error also makes the
    kernel drop every cell Run All queued after it, the submit cell among them;
    with it JupyterLab (and nbclient) ask the kernel not to stop on the error. The
    error is still shown, and nbgrader, which runs notebooks with errors allowed
    anyway, judges the notebook as before.
    """

    def preprocess(self, nb, resources):
        exercise = resources["nbgrader"]["assignment"]
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            if cell.cell_type == "code" and RUN_PAST not in tags:
                cell.metadata["tags"] = [*tags, RUN_PAST]
        nb.cells.extend(from_dict(learner_submit.cells(exercise)))
        return nb, resources


def release_preprocessors():
    """nbgrader's own ``GenerateAssignment.preprocessors``, in its order, with
    :class:`AddSubmitCells` right after ``IncludeHeaderFooter``."""
    defaults = list(GenerateAssignment.class_traits()["preprocessors"].default())
    at = defaults.index(IncludeHeaderFooter) + 1
    return [*defaults[:at], AddSubmitCells, *defaults[at:]]
