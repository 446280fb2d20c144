"""Step 3 of grading: judge the observations with the hidden pytest tests.

Runs in the grader's process, never in the learner's. pytest collects
``hidden/test_<exercise>.py`` and a small plugin hands each test the
observations; outcomes become Gradescope test entries. A failing test shows
only its :class:`~autograder.feedback.GradeFailure` message.
"""
import importlib
from pathlib import Path

import pytest

from autograder.feedback import GradeFailure

HIDDEN = Path(__file__).resolve().parent / "hidden"


def hidden_tests(exercise):
    """``[(function name, title, points)]`` of an exercise's hidden tests, in order."""
    module = importlib.import_module(f"autograder.hidden.test_{exercise}")
    return [(name, fn.title, fn.points) for name, fn in vars(module).items()
            if name.startswith("test_") and hasattr(fn, "points")]


def entry(title, points, score, output, status=None):
    """One Gradescope ``tests`` entry (``visibility`` visible: feedback is for learners)."""
    return {"name": title, "score": score, "max_score": points,
            "status": status or ("passed" if score == points else "failed"),
            "output": output, "visibility": "visible"}


def all_failed(exercise, message):
    """Every hidden test scored 0 with the same message (timeouts, missing function)."""
    return [entry(title, points, 0, message) for _, title, points in hidden_tests(exercise)]


class _Observations:
    """pytest plugin: provides ``obs``/``seed`` fixtures and records outcomes."""

    def __init__(self, obs, seed):
        self._obs, self._seed, self.outcomes = obs, seed, {}

    @pytest.fixture
    def obs(self):
        return self._obs

    @pytest.fixture
    def seed(self):
        return self._seed

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if call.when == "call" or report.failed:
            self.outcomes[item.name] = _message(call)


def _message(call):
    if call.excinfo is None:
        return None
    exc = call.excinfo.value
    if isinstance(exc, GradeFailure):
        return str(exc)
    # A bug in a hidden test or an unexpected observation: never show source.
    return f"The grader could not complete this check ({type(exc).__name__}); please tell your instructor."


def judge(exercise, obs, seed):
    """Run the exercise's hidden tests on ``obs``; return Gradescope test entries."""
    plugin = _Observations(obs, seed)
    args = [str(HIDDEN / f"test_{exercise}.py"), "-p", "no:terminal",
            "-p", "no:cacheprovider", "--assert=plain", "-W", "ignore",
            f"--rootdir={HIDDEN}", "-o", "addopts=", "-s"]
    pytest.main(args, plugins=[plugin])
    tests = []
    for name, title, points in hidden_tests(exercise):
        if name not in plugin.outcomes:
            tests.append(entry(title, points, 0, "This check did not run."))
            continue
        message = plugin.outcomes[name]
        tests.append(entry(title, points, points if message is None else 0,
                           message or f"Passed: {title}."))
    return tests
