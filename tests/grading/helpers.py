"""Build submissions from sample answer cells, as learners hand them in.

Each exercise's samples live in its folder, ``autograder/exercises/<exercise>/
hidden/samples/``, with their expected grades in ``expected.json``.
Every function takes the assignment, defaulting to the first exercise.
"""
import json
import shutil
import subprocess

from autograder import exercises
from tests.conftest import BIN, REPO

ASSIGNMENT = "update_with_donate"


def samples_dir(assignment=ASSIGNMENT):
    return exercises.get(assignment).samples


SAMPLES = samples_dir()  # the first exercise's


def expected(assignment=ASSIGNMENT):
    """``{sample name: expected outcome}`` from the assignment's expected.json."""
    data = json.loads((samples_dir(assignment) / "expected.json").read_text())
    data.pop("_comment")
    return data


EXPECTED = expected()


def released_notebook(course, assignment=ASSIGNMENT):
    path = course / "release" / assignment / f"{assignment}.ipynb"
    return json.loads(path.read_text())


def with_answer(notebook, source, assignment=ASSIGNMENT):
    """A copy of ``notebook`` whose answer cell holds ``source``."""
    nb = json.loads(json.dumps(notebook))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == assignment:
            cell["source"] = source
    return nb


def submitted_tree(course, root, names=None, assignment=ASSIGNMENT):
    """Write ``root/<name>/<assignment>/<assignment>.ipynb`` per sample."""
    release = released_notebook(course, assignment)
    for name in names or expected(assignment):
        nb = release if name == "unattempted" else with_answer(
            release, (samples_dir(assignment) / f"{name}.py").read_text(), assignment)
        target = root / name / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1))
    return root


def checkout(root):
    """Copy the course's files as a clone has them into ``root``, with the shared .venv
    beside them (as ``make`` leaves it): where the README's commands run from."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                             "autograder", "exercises"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout.split("\n")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    (root / ".venv").symlink_to(BIN.parent)
    return root
