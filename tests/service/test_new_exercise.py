"""An exercise registered and released while the grading service runs is served at
once: accepted, graded with its own hidden tests and written to the gradebook, with
no restart (a restart under the hub stops every learner's server)."""
import json
import subprocess

from autograder import new_exercise
from autograder.defaults import release_argv
from tests.course import BIN, copy_tracked, nbgrader_env, quiet
from tests.grading.helpers import checkout, with_answer
from tests.service.running import Service, http

NEW = "added_mid_course"  # laid out by python -m autograder.new_exercise, registered mid-course


def _release(root, exercise):
    """``make release``'s command for ``exercise``, from the checkout's ``exercises/``."""
    argv = release_argv(exercise, BIN)
    subprocess.run([*argv, *quiet(argv)], cwd=root / "exercises", env=nbgrader_env(root),
                   check=True, capture_output=True, text=True, timeout=600)


def _register(root):
    """What docs/exercises.md has an instructor do first: lay the exercise out (every
    part, the name in NAMES) with its placeholder task. Returns its full-marks answer."""
    copy_tracked(root, "_toc.yml", "book/exercises", "book/lessons")  # where its page is listed
    new_exercise.lay_out(NEW, root)
    return (root / "autograder" / "exercises" / NEW / "hidden" / "samples" / "reference.py").read_text()


def test_an_exercise_released_mid_course_is_graded_without_a_restart(tmp_path):
    root = checkout(tmp_path / "checkout")
    _release(root, "update_with_donate")
    service = Service(tmp_path, root / "exercises", cwd=root).start()
    try:
        answer = _register(root)
        _release(root, NEW)
        assert NEW in http("GET", service.url + "/api/config")[2]["exercises"]
        release = json.loads((root / "exercises" / "release" / NEW / f"{NEW}.ipynb").read_text())
        sub_id = service.submit("ada", with_answer(release, answer, NEW), exercise=NEW)
        result = service.wait_done([sub_id])[sub_id]["result"]
        assert (result["score"], result["max_score"]) == (10, 10), result["output"]
        assert result["extra_data"]["exercise"] == NEW
        service.settled_rows()
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{root / 'exercises' / 'gradebook.db'}") as gb:
            assert gb.find_submission(NEW, "ada").score == 10
    finally:
        service.stop()
