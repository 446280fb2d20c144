"""Build submissions from sample answer cells, as learners hand them in.

Each exercise's samples live in its folder, ``autograder/exercises/<exercise>/
hidden/samples/``, with their expected grades in ``expected.json``.
Every function takes the assignment, defaulting to the first exercise.
"""
import json
import socket
import threading

from autograder import exercises
from tests.course import BIN, copy_tracked

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
STOPPED = "Not run: every call raised"  # a check kept from running by one error (judge.said_once)


def one_per_check(assignment=ASSIGNMENT, also=()):
    """The samples of ``assignment`` that ``nbgrader autograde`` grades: ``reference`` and
    ``unattempted`` (the answer and the notebook as handed out, where the exercise has
    them), then, check by check, samples that fail it (fewest other failed checks first)
    until the chosen samples' totals fix that check's points (its row of failed checks is
    in the span of theirs: a total is the maximum less the points of the checks it fails),
    and ``also``. So equal totals in both graders mean equal points for every check. The
    command line grades every sample; nbgrader's kernels take seconds each, and samples
    that fail the same checks differ only in the learner's code, which both graders run
    the same way (none writes to stderr or logs, where a kernel differs:
    tests/grading/test_agreement.py's corpus does)."""
    import numpy as np

    want = expected(assignment)
    checks = sorted({c for w in want.values() if isinstance(w["failed"], list) for c in w["failed"]})
    row = {name: np.array([float(w["failed"] == "all" or c in w["failed"]) for c in checks])
           for name, w in want.items()}
    chosen = [name for name in ("reference", "unattempted") if name in want]

    def rank(names, *extra):
        return np.linalg.matrix_rank(np.array([row[n] for n in names] + list(extra)).reshape(-1, len(checks)))

    for i in range(len(checks)):
        unit = np.eye(len(checks))[i]
        for name in sorted((n for n in want if row[n][i]), key=lambda n: (row[n].sum(), n)):
            if rank(chosen, unit) == rank(chosen):  # fixed by the totals chosen so far
                break
            if rank(chosen + [name]) > rank(chosen):
                chosen.append(name)
    return sorted(set(chosen) | set(also))


def assert_phrases(want, got, assignment=ASSIGNMENT):
    """``want``'s ``says`` / ``never_says`` (hidden test -> phrase) against the results.json
    ``got``: that check's feedback names the cause the observations show, not another."""
    from autograder.judge import hidden_tests

    titles = {test: title for test, title, _ in hidden_tests(assignment)}
    outputs = {t["name"]: t["output"] for t in got["tests"]}
    for test, phrase in want.get("says", {}).items():
        assert phrase in outputs[titles[test]], (test, phrase, outputs[titles[test]])
    for test, phrase in want.get("never_says", {}).items():
        assert phrase not in outputs[titles[test]], (test, phrase, outputs[titles[test]])


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
    copy_tracked(root, "autograder", "exercises")
    (root / ".venv").symlink_to(BIN.parent)
    return root


class Listener:
    """A server that accepts and counts connections (``accepted``) until ``close()``:
    what learner code must never reach. On loopback (``127.0.0.1:port``) unless given
    ``sock``, a listening socket of another family (``port`` is then None)."""

    def __init__(self, sock=None):
        self.sock = sock or socket.create_server(("127.0.0.1", 0))
        self.accepted = 0
        self.port = self.sock.getsockname()[1] if self.sock.family == socket.AF_INET else None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.sock.close()
