"""`python -m autograder` refuses bad usage before grading anything, and leaves
no zygote socket folder behind."""
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
