"""Step 3 of grading: judge the observations with the hidden tests.

Runs in the grader's process, never in the learner's. The hidden tests
(``exercises/<exercise>/hidden/tests.py``) are pytest tests taking the fixtures ``obs``
and ``seed``; here each is called directly, in file order, exactly as the
nbgrader bridge calls them, so both graders judge with the same code (and a
class is not charged a pytest session per submission). To run them under
pytest, point ``AUTOGRADER_OBSERVATIONS`` at a JSON file ``{"obs": ..., "seed": ...}``
(see ``exercises/conftest.py``). A failing test shows only its
:class:`~autograder.feedback.GradeFailure` message, never its source.
"""
import inspect

from autograder import exercises
from autograder.feedback import GradeFailure, where_text
from autograder.results import CheckResult


def hidden_module(exercise):
    return exercises.get(exercise).hidden()


def hidden_tests(exercise):
    """``[(function name, title, points)]`` of an exercise's hidden tests, in order."""
    module = hidden_module(exercise)
    return [(name, fn.title, fn.points) for name, fn in vars(module).items()
            if name.startswith("test_") and hasattr(fn, "points")]


def run_test(exercise, name, obs, seed):
    """Run one hidden test; return None if it passed, else the learner's message."""
    test = getattr(hidden_module(exercise), name)
    fixtures = {"obs": obs, "seed": seed}
    try:
        test(**{k: v for k, v in fixtures.items() if k in inspect.signature(test).parameters})
    except GradeFailure as exc:
        return str(exc)
    except Exception as exc:  # malformed observations or a grader bug: never show source
        return (f"The grader could not complete this check ({type(exc).__name__}); "
                "please tell your instructor.")
    return None


def check(exercise, name, obs, seed):
    """Hidden test ``name`` of ``exercise`` on ``obs``: its :class:`CheckResult`.

    The one verdict both graders give: the command line and the service
    through :func:`checks`, ``nbgrader autograde`` through
    :mod:`autograder.nbgrader_bridge`.
    """
    test = getattr(hidden_module(exercise), name)
    if "missing" in obs:  # the probe found no function to test
        message = f"`{obs['missing']}` is not defined"
    else:
        message = run_test(exercise, name, obs, seed)
        if message is not None and isinstance(obs.get("stopped"), dict):
            message = said_once(exercise, name, obs, seed, message)
    if message is None:
        return CheckResult(name, test.title, test.points, test.points, "passed",
                           f"Passed: {test.title}.")
    return CheckResult(name, test.title, 0, test.points, "failed", message)


def said_once(exercise, name, obs, seed, message):
    """One cause stopped every call (the probe's ``obs["stopped"]``): the first failing
    check says it, with its line, and names the checks it kept from running; each of
    those says only that it did not run. Decided from ``obs`` alone, so each graded
    cell of ``nbgrader autograde`` says the same as the course grader."""
    failing = [(n, title) for n, title, _ in hidden_tests(exercise)
               if run_test(exercise, n, obs, seed) is not None]
    (lead, lead_title), others = failing[0], [title for _, title in failing[1:]]
    where = where_text(obs["stopped"].get("where"))
    if name != lead:
        return (f"Not run: every call raised the error reported under \"{lead_title}\""
                + (f" ({where})" if where else "") + ".")
    return (message + (f"\nWhere: {where}" if where else "")
            + (f"\nNot run because of it: {'; '.join(others)}." if others else ""))


def checks(exercise, obs, seed):
    """Every hidden test of ``exercise`` on ``obs``, in order: ``[CheckResult]``."""
    return [check(exercise, name, obs, seed) for name, _, _ in hidden_tests(exercise)]


NOT_RUN = "Not run."


def not_run(exercise):
    """Every hidden test scored 0, not run (timeouts, a missing function, the stub).

    The reason is said once, in the result's ``output``; each check says only
    :data:`NOT_RUN`, so feedback does not repeat it once per test.
    """
    return [CheckResult(name, title, 0, points, "failed", NOT_RUN)
            for name, title, points in hidden_tests(exercise)]
