"""`python -m autograder` refuses bad usage before grading anything, and leaves
no zygote socket folder behind."""
import os
import subprocess
import sys

from tests.conftest import REPO, nbgrader_env
from tests.grading.helpers import SAMPLES


def run(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=REPO,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=300)


def test_a_mistyped_path_is_an_error_not_a_zero(tmp_path):
    proc = run(SAMPLES / "reference.py", tmp_path / "submited", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert f"no such file or folder: {tmp_path / 'submited'}" in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing graded, no row in summary.csv


def test_a_folder_without_submissions_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = run(tmp_path / "empty", "--out", tmp_path / "out")
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
