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

# The course is installed in .venv (editable, `make venv`), whose nbgrader this is and
# whose interpreter runs the kernels nbgrader starts: the hidden cells import
# autograder.nbgrader_bridge from there, as this file imports the course below.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
from autograder.nbgrader_bridge import IGNORED_STDERR  # noqa: E402
from autograder.nbgrader_release import release_preprocessors  # noqa: E402
from autograder.sandbox.confine import XLA_FLAGS  # noqa: E402

# The kernels compile as the course grader's learner processes do: cheaper XLA
# compiles that leave donation and aliasing as they are (see XLA_FLAGS there), so
# autograde is faster and both graders run the same compiled code.
os.environ.setdefault("XLA_FLAGS", XLA_FLAGS)

# A graded cell's score is the hidden test's verdict alone: the bridge marks a
# failure in its stderr message, and every other stderr output (JAX's INFO
# logs, a learner's print(file=sys.stderr), a warning) is dropped before
# nbgrader saves grades, so it can never score a cell 0.
c.IgnorePattern.enabled = True  # off by default in nbgrader 0.9.6
c.IgnorePattern.pattern = IGNORED_STDERR

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Every released notebook ends with the submit cells, written once in
# autograder/learner_submit.py and added here, before nbgrader locks, checksums
# and records the cells (so validate and autograde know them).
c.GenerateAssignment.preprocessors = release_preprocessors()
c.Execute.timeout = 120
# Feedback shows each graded cell's output, never its hidden part.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# Learners keep the notebook they were given; an edited read-only cell is
# restored from the instructor's copy by nbgrader's OverwriteCells.
# Deadlines are nbgrader's: a due date per assignment (`nbgrader db assignment add
# NAME --duedate=...`, or `python -m autograder.service.deadlines due NAME WHEN`), an
# extension per learner (`... deadlines extend NAME LEARNER HOURS`), and this late
# policy, which `nbgrader autograde` and the grading service both apply:
# none, zero (the default: late work is graded, and counts 0) or per_day.
c.AssignLatePenalties.plugin_class = "autograder.late_policy.CourseLatePolicy"
c.CourseLatePolicy.penalty_method = "zero"
c.CourseLatePolicy.points_per_day = 1.0
