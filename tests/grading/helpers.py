"""Build submissions from sample answer cells, as learners hand them in."""
import json
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "samples"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
EXPECTED.pop("_comment")
ASSIGNMENT = "update_with_donate"


def released_notebook(course):
    path = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    return json.loads(path.read_text())


def with_answer(notebook, source):
    """A copy of ``notebook`` whose answer cell holds ``source``."""
    nb = json.loads(json.dumps(notebook))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == ASSIGNMENT:
            cell["source"] = source
    return nb


def submitted_tree(course, root, names=None):
    """Write ``root/<name>/update_with_donate/update_with_donate.ipynb`` per sample."""
    release = released_notebook(course)
    for name in names or EXPECTED:
        nb = release if name == "unattempted" else with_answer(
            release, (SAMPLES / f"{name}.py").read_text())
        target = root / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1))
    return root
