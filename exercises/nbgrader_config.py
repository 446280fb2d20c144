"""nbgrader course: the exercises of the JAX buffer donation course.

Run nbgrader from this folder: `nbgrader generate_assignment update_with_donate`,
`nbgrader autograde update_with_donate`, `nbgrader generate_feedback ...`.
"""
import os
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

HERE = Path(__file__).resolve().parent
c.CourseDirectory.root = str(HERE)
c.CourseDirectory.course_id = "jax-donation"

# The hidden cells call autograder.nbgrader_bridge: the kernels nbgrader starts
# inherit this environment, so the repo root goes on their import path.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.Execute.timeout = 120
# Feedback shows each graded cell's output, never its hidden part.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# Learners keep the notebook they were given; an edited read-only cell is
# restored from the instructor's copy by nbgrader's OverwriteCells.
