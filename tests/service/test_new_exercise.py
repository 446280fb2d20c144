"""An exercise registered and released while the grading service runs is served at
once: accepted, graded with its own hidden tests and written to the gradebook, with
no restart (a restart under the hub stops every learner's server)."""
import json
import shutil
import subprocess

from autograder.defaults import release_argv
from tests.course import BIN, nbgrader_env, quiet
from tests.grading.helpers import SAMPLES, checkout, with_answer
from tests.service.running import Service, http

NEW = "update_again"  # a second copy of update_with_donate, registered mid-course


def _release(root, exercise):
    """``make release``'s command for ``exercise``, from the checkout's ``exercises/``."""
    argv = release_argv(exercise, BIN)
    subprocess.run([*argv, *quiet(argv)], cwd=root / "exercises", env=nbgrader_env(root),
                   check=True, capture_output=True, text=True, timeout=600)


def _register(root):
    """What docs/exercises.md has an instructor do (the grader's folder, the
    source notebook, the name in NAMES), here by copying update_with_donate."""
    shutil.copytree(root / "autograder" / "exercises" / "update_with_donate",
                    root / "autograder" / "exercises" / NEW)
    source = root / "exercises" / "source"
    (source / NEW).mkdir()
    text = (source / "update_with_donate" / "update_with_donate.ipynb").read_text()
    text = text.replace('"grade_id": "update_with_donate"', f'"grade_id": "{NEW}"')
    text = text.replace('check(\\"update_with_donate\\"', f'check(\\"{NEW}\\"')
    (source / NEW / f"{NEW}.ipynb").write_text(text)
    registry = root / "autograder" / "exercises" / "__init__.py"
    registry.write_text(registry.read_text().replace('"silent_donation")',
                                                     f'"silent_donation", "{NEW}")'))


def test_an_exercise_released_mid_course_is_graded_without_a_restart(tmp_path):
    root = checkout(tmp_path / "checkout")
    _release(root, "update_with_donate")
    service = Service(tmp_path, root / "exercises", cwd=root).start()
    try:
        answer = (SAMPLES / "reference.py").read_text()
        _register(root)
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
