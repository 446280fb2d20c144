"""The exercise notebooks' submit cell (autograder/learner_submit.py) never sends an
older version of the notebook than the one the learner ran: it waits for a save
made after it started, and refuses, saying why, when none comes. (The whole path,
in JupyterLab without pressing Ctrl-S, is tests/browser/test_jupyterlab.py.)"""
import json
import os
import threading
import time

from autograder import learner_submit


def _saved_long_ago(tmp_path):
    notebook = tmp_path / "update_with_donate.ipynb"
    notebook.write_text('{"version": "saved before the run"}')
    past = time.time() - 60
    os.utime(notebook, (past, past))
    return notebook


def test_it_waits_for_a_save_made_after_it_started(tmp_path):
    notebook = _saved_long_ago(tmp_path)
    since, said = time.time(), []
    threading.Timer(1.0, lambda: notebook.write_text('{"version": "as run"}')).start()
    assert learner_submit.wait_for_save(str(notebook), since, say=said.append)
    assert json.loads(notebook.read_text()) == {"version": "as run"}


def test_without_a_save_it_refuses_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(learner_submit, "ASK_AFTER_S", 0.2)
    monkeypatch.setattr(learner_submit, "SAVE_WAIT_S", 1.0)
    notebook, said = _saved_long_ago(tmp_path), []
    assert not learner_submit.wait_for_save(str(notebook), time.time(), say=said.append)
    assert said[0].startswith("Save the notebook (Ctrl-S)")
    assert said[-1].startswith("Not submitted:") and "older version" in said[-1]


def test_a_save_still_being_written_is_read_once_it_is_whole(tmp_path):
    """Jupyter writes a save into the file itself: read as the save starts, the file is
    empty, then cut short (a hub test's submit cell once stopped on the empty file)."""
    notebook = tmp_path / "update_with_donate.ipynb"
    notebook.write_text("")
    whole = json.dumps({"cells": [], "version": "as run"})

    def save():
        time.sleep(0.3)
        notebook.write_text(whole[:10])
        time.sleep(0.3)
        notebook.write_text(whole)

    threading.Thread(target=save).start()
    said = []
    assert learner_submit.read_saved(str(notebook), say=said.append) == json.loads(whole)
    assert said == []


def test_a_save_that_never_becomes_json_is_refused_saying_why(tmp_path, monkeypatch):
    monkeypatch.setattr(learner_submit, "READ_WAIT_S", 0.5)
    notebook, said = tmp_path / "update_with_donate.ipynb", []
    notebook.write_text('{"cells": [')
    assert learner_submit.read_saved(str(notebook), say=said.append) is None
    assert said[-1].startswith("Not submitted:") and "Ctrl-S" in said[-1]


def test_the_cell_holds_the_hubs_token_else_make_serves_key(monkeypatch):
    """The service decides who submits from what the cell holds: the hub's token on the
    hub, make serve's key (its kernels' GRADER_TOKEN) under make serve, else nothing."""
    for name in ("JUPYTERHUB_API_TOKEN", "GRADER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert learner_submit.auth_headers() == {}
    monkeypatch.setenv("GRADER_TOKEN", "the-key-of-this-make-serve")
    assert learner_submit.auth_headers() == {"Authorization": "token the-key-of-this-make-serve"}
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-token")
    assert learner_submit.auth_headers() == {"Authorization": "token hub-token"}


def test_every_released_notebook_ends_with_the_one_submit_cell(released_course):
    """Written once (learner_submit.submit_cells) and added by nbgrader generate_assignment:
    each learner's notebook ends with it, read-only with nbgrader's checksum (so
    validate and autograde treat it as any locked cell); no source notebook has its own."""
    from autograder import notebook
    from autograder.exercises import get, names

    for exercise in names():
        source = notebook.cells(json.loads(get(exercise).source.read_text()))
        assert not {"submit", "submit_intro"} & {notebook.nbgrader_meta(c).get("grade_id") for c in source}
        released = json.loads((released_course / "release" / exercise / f"{exercise}.ipynb").read_text())
        intro, cell = notebook.cells({"nbformat": 4, "cells": released["cells"][-2:]})
        meta = notebook.nbgrader_meta(cell)
        assert (notebook.nbgrader_meta(intro)["grade_id"], meta["grade_id"]) == ("submit_intro", "submit")
        assert "from autograder.learner_submit import submit" in cell["source"]
        assert f'submit("{exercise}")' in cell["source"]
        assert meta["locked"] and not meta["grade"]
        assert meta["checksum"] == notebook.checksum(cell)


def test_late_work_prints_the_grade_it_counts(capsys):
    """The service's answer on late work has its penalty (``late_penalty``, points): the
    cell prints the score the checks gave and what it counts under the late policy."""
    test = {"name": "values", "status": "passed", "score": 11, "max_score": 11, "output": ""}
    sub = {"result": {"score": 11, "max_score": 11, "output": "", "tests": [test]},
           "seconds": {"grading": 1.0}}
    for penalty, shown in ((2.0, "Score: 11 / 11, counted 9 / 11 (late) "),
                           (None, "Score: 11 / 11 (graded")):
        learner_submit._show(dict(sub, late_penalty=penalty))
        assert capsys.readouterr().out.startswith(shown)
