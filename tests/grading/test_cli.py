"""`python -m autograder` refuses bad usage before grading anything, and leaves
no zygote socket folder behind; a zygote started before the exercises are known serves
them, and exits when its grader is gone."""
import os

from tests.course import grader_cli
from tests.grading.helpers import SAMPLES


def test_a_mistyped_path_is_an_error_not_a_zero(tmp_path):
    proc = grader_cli(SAMPLES / "reference.py", tmp_path / "submited", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert f"no such file or folder: {tmp_path / 'submited'}" in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing graded, no row in summary.csv


def test_a_folder_without_submissions_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = grader_cli(tmp_path / "empty", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "no submissions found" in proc.stderr


def test_the_zygote_leaves_no_socket_folder_behind():
    from autograder.sandbox import Zygote

    stopped, orphaned = Zygote(), Zygote()
    for z in (stopped, orphaned):
        z.start()
    stopped.stop()  # the grader's atexit
    orphaned.proc.stdin.close()  # the grader died: the zygote sees EOF and exits
    orphaned.proc.wait(timeout=30)
    for z in (stopped, orphaned):
        assert not os.path.exists(os.path.dirname(z.path))


def test_a_prestarted_zygote_grades_and_leaves_no_scratch_behind():
    """The command starts its zygote before it reads the hand-ins (``prestart``); the
    launch then tells that very process its exercise. Each supervisor removes its scratch
    folder and log after it answered."""
    import glob
    import tempfile
    import time

    from autograder import sandbox

    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "grade-*")))
    z = sandbox.Zygote()
    try:
        z.prestart()
        spare = z.spare
        z.launch(["update_with_donate"])
        assert z.proc is spare and z.spare is None
        request = {"exercise": "update_with_donate", "seed": 1, "memory_mib": 4096, "hide": [],
                   "cells": [{"label": "answer", "source": (SAMPLES / "reference.py").read_text()}]}
        with sandbox.lease_uid(9) as lease:
            outcome = z.send(request, sandbox.Limits(seconds=120), lease)
        assert outcome.status == "ok", outcome
        assert "missing" not in outcome.reply["obs"]
        deadline = time.monotonic() + 30
        while set(glob.glob(os.path.join(tempfile.gettempdir(), "grade-*"))) - before:
            assert time.monotonic() < deadline, "a supervisor left its scratch folder or log"
            time.sleep(0.05)
    finally:
        z.stop()


def test_a_prestarted_zygote_exits_when_its_grader_is_gone():
    from autograder.sandbox import Zygote

    z = Zygote()
    z.prestart()
    z.spare.stdin.close()  # the grader died before it knew its exercises
    assert z.spare.wait(timeout=120) == 0
    z.spare.stdout.close()
