"""Every submission a learner sends is accounted for: stored with an id and graded, or
refused with a reason the learner reads. Against the real service, on a machine made
busy (CPU hogs beside it) and across a service restart while the submit cell waits."""
import contextlib
import json
import subprocess
import sys
import threading
import time

from autograder import learner_submit
from tests.grading.helpers import ASSIGNMENT
from tests.service.running import WAIT, http
from tests.service.submissions import small_notebook


@contextlib.contextmanager
def cpu_hogs(count=2):
    """``count`` processes spinning on a core each, for the block's length."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_under_load_every_submission_is_scored_or_refused(new_service):
    service = new_service(jobs=1).start()
    answers = {}

    def send(name):
        answers[name] = http("POST", service.url + "/api/submissions", {
            "exercise": ASSIGNMENT, "learner": name, "notebook": small_notebook("reference")})

    with cpu_hogs():
        senders = [threading.Thread(target=send, args=(f"busy{i}",)) for i in range(4)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(WAIT)
        accepted = [body["id"] for status, _, body in answers.values() if status == 202]
        refused = [body for status, _, body in answers.values() if status != 202]
        assert len(answers) == 4
        assert all(isinstance(b, dict) and b.get("code") and b.get("error") for b in refused), refused
        done = service.wait_done(accepted)
    # scored: a result with a score and its feedback (a submission the load made time out
    # is scored too, with the timeout said; it is not lost)
    for answer in done.values():
        result = answer["result"]
        assert isinstance(result["score"], (int, float)) and result["output"], result


def test_the_submit_cell_follows_its_submission_through_a_restart(new_service, tmp_path,
                                                                  monkeypatch, capsys):
    """The service stops while the cell waits for the score (its poll gets no answer),
    and starts again: the cell keeps the submission's id, and shows the score."""
    service = new_service(jobs=0).start()  # nothing grades before the restart
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    notebook.write_text(json.dumps(small_notebook("reference")))
    monkeypatch.setenv("GRADER_URL", service.url)
    monkeypatch.setenv("GRADER_LEARNER", "ada")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    monkeypatch.setattr(learner_submit, "RETRY_S", 0.5)
    cell = threading.Thread(target=learner_submit.submit, args=(ASSIGNMENT,))
    cell.start()
    deadline = time.monotonic() + WAIT
    while not service.rows():
        assert time.monotonic() < deadline, "never received"
        # saved again and again, as JupyterLab's autosave does: one save made before the
        # cell's thread read the clock (a loaded machine) would leave it waiting for one
        notebook.write_text(notebook.read_text())
        time.sleep(0.5)
    service.stop()
    time.sleep(3)  # polls that get no answer
    service.options["jobs"] = 1
    service.start()
    cell.join(WAIT)
    printed = capsys.readouterr().out
    assert not cell.is_alive(), printed
    [sub_id] = service.rows()
    assert f"Received: submission {sub_id}" in printed, printed
    assert "does not answer" in printed and "Score: 10 / 10" in printed, printed
