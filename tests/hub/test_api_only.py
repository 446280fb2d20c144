"""The scaled-out grading service behind the hub: the hub's grader process answers the
API only (``GRADER_JOBS=0``) and a separate worker grades, as in deploy/README.md. The
instructor's class CSV comes from the API process, which grades nothing itself."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.course import REPO, nbgrader_env
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.running import Signed, class_csv_when, running_hub

WAIT_S = 600


@pytest.fixture(scope="module")
def api_only_hub(accounts, released_course, tmp_path_factory):
    with running_hub(accounts, released_course, tmp_path_factory.mktemp("api-only"),
                     GRADER_JOBS="0") as hub:
        worker = subprocess.Popen(
            [sys.executable, "-m", "autograder.service.worker", "--db", hub.env["GRADER_DB"],
             "--course", hub.env["GRADER_COURSE"], "--jobs", "1",
             "--slot-base", str(int(hub.env["GRADER_SLOT_BASE"]) + 4)],
            cwd=REPO, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            yield hub
        finally:
            worker.terminate()
            worker.wait(timeout=60)


def test_the_class_csv_of_an_api_only_grader(api_only_hub, accounts):
    made, _ = accounts
    ada, ins = Signed(api_only_hub, made["ada"]), Signed(api_only_hub, made["ins"])
    course = api_only_hub.env["GRADER_COURSE"]
    notebook = with_answer(released_notebook(Path(course)), (SAMPLES / "reference.py").read_text())
    done = ada.wait_done(ada.submit(notebook))
    assert done["result"]["score"] == 10
    rows = class_csv_when(ins, "update_with_donate", {ada.name: 10.0}, WAIT_S)
    assert any(r["student_id"] == ada.name and float(r["score"]) == 10.0 for r in rows), rows
