"""Step 3 of grading: judge what the learner's process replied, with the hidden tests.

:func:`verdict` reads the reply (observations, cell errors, a missing function)
and gives the checks, the overall words and the status; :func:`check_result` is one
hidden test on observations, what ``nbgrader autograde``'s kernels run per cell
(:mod:`autograder.nbgrader_bridge`).

Runs in the grader's process, never in the learner's. The hidden tests
(``autograder/exercises/<exercise>/hidden/tests.py``) are pytest tests taking the fixtures ``obs``
and ``seed``; here each is called directly, in file order, exactly as the
nbgrader bridge calls them, so both graders judge with the same code (and a
class is not charged a pytest session per submission). To run them under
pytest, point ``AUTOGRADER_OBSERVATIONS`` at a JSON file ``{"obs": ..., "seed": ...}``
(see ``autograder/exercises/conftest.py``). A failing test shows only its
:class:`~autograder.feedback.GradeFailure` message, never its source, ending with
the requirement row(s) of the task it grades (:func:`graded_rows`); a
:class:`~autograder.feedback.NotChecked` says "not checked" with the title of the
check whose failure took its evidence, which alone says what was observed.
"""
import inspect

from autograder import exercises, requirements
from autograder.feedback import GradeFailure, NotChecked, where_text
from autograder.results import CheckResult


def hidden_module(exercise):
    return exercises.get(exercise).hidden()


def hidden_tests(exercise):
    """``[(function name, title, points)]`` of an exercise's hidden tests, in order."""
    return exercises.get(exercise).tests()


def failure(exercise, name, obs, seed):
    """Run one hidden test; return None if it passed, else the learner's message."""
    test = getattr(hidden_module(exercise), name)
    fixtures = {"obs": obs, "seed": seed}
    try:
        test(**{k: v for k, v in fixtures.items() if k in inspect.signature(test).parameters})
    except NotChecked as exc:
        titles = {n: title for n, title, _ in hidden_tests(exercise)}
        return exc.told(titles.get(exc.needs, exc.needs)) + graded_rows(exercise, name, needs=exc.needs)
    except GradeFailure as exc:
        return str(exc) + graded_rows(exercise, name, row=getattr(exc, "row", None))
    except Exception as exc:  # malformed observations or a grader bug: never show source
        return (f"The grader could not complete this check ({type(exc).__name__}); "
                "please tell your instructor.")
    return None


def check_result(exercise, name, obs, seed, failures=None):
    """Hidden test ``name`` of ``exercise`` on ``obs``: its :class:`CheckResult`.

    The one verdict both graders give: the command line and the service
    through :func:`checks`, ``nbgrader autograde`` through
    :mod:`autograder.nbgrader_bridge`. ``failures`` (``{test name: message or
    None}`` of every hidden test on ``obs``) spares running them again.
    """
    test = getattr(hidden_module(exercise), name)
    if "missing" in obs:  # the probe found no function to test
        message = f"`{obs['missing']}` is not defined"
    else:
        message = failures[name] if failures is not None else failure(exercise, name, obs, seed)
        if message is not None and isinstance(obs.get("stopped"), dict):
            message = said_once(exercise, name, obs, seed, message, failures)
    if message is None:
        return CheckResult(name, test.title, test.points, test.points, "passed",
                           f"Passed: {test.title}.")
    return CheckResult(name, test.title, 0, test.points, "failed", message)


def graded_rows(exercise, name, row=None, needs=None):
    """The last line of check ``name``'s failed feedback: the requirement rows of the task
    it grades (:mod:`autograder.requirements`), or '' for an exercise without a table.

    ``row``: the one row the check observed violated; ``needs``: the check whose failure
    left this one unchecked (the rows both grade). Else every row the check grades."""
    try:
        rows = requirements.rows_of_check(exercise, name)
    except ModuleNotFoundError as exc:  # no requirements.py; an error inside one is raised
        if exc.name != f"autograder.exercises.{exercise}.requirements":
            raise
        return ""
    narrowed = [r for r in rows if r.id == row or (needs is not None and needs in r.checks)]
    rows = narrowed or rows
    return (REQUIREMENT + "; ".join(row.title for row in rows)) if rows else ""


REQUIREMENT = "\nRequirement: "


def said_once(exercise, name, obs, seed, message, failures=None):
    """One cause stopped every call (the probe's ``obs["stopped"]``): the first failing
    check says it, with its line, and names the checks it kept from running; each of
    those says only that it did not run. Decided from ``obs`` alone, so each graded
    cell of ``nbgrader autograde`` says the same as the course grader."""
    failures = failures if failures is not None else failures_of(exercise, obs, seed)
    failing = [(n, title) for n, title, _ in hidden_tests(exercise) if failures[n] is not None]
    (lead, lead_title), others = failing[0], [title for _, title in failing[1:]]
    where = where_text(obs["stopped"].get("where"))
    if name != lead:
        return (f"Not run: every call raised the error reported under \"{lead_title}\""
                + (f" ({where})" if where else "") + ".")
    said, rows, last = message.partition(REQUIREMENT)  # the row stays the last line
    return (said + (f"\nWhere: {where}" if where else "")
            + (f"\nNot run because of it: {'; '.join(others)}." if others else "") + rows + last)


def failures_of(exercise, obs, seed):
    """``{test name: :func:`failure`}`` of every hidden test of ``exercise`` on ``obs``."""
    return {name: failure(exercise, name, obs, seed) for name, _, _ in hidden_tests(exercise)}


def checks(exercise, obs, seed):
    """Every hidden test of ``exercise`` on ``obs``, in order: ``[CheckResult]``; each
    test runs once."""
    failures = None if "missing" in obs else failures_of(exercise, obs, seed)
    return [check_result(exercise, name, obs, seed, failures)
            for name, _, _ in hidden_tests(exercise)]


NOT_RUN = "Not run."


def not_run(exercise):
    """Every hidden test scored 0, not run (timeouts, a missing function, the stub).

    The reason is said once, in the result's ``output``; each check says only
    :data:`NOT_RUN`, so feedback does not repeat it once per test.
    """
    return [CheckResult(name, title, 0, points, "failed", NOT_RUN)
            for name, title, points in hidden_tests(exercise)]


def verdict(sub, outcome, seed):
    """``(checks, output, status)`` for a loaded submission and its sandbox outcome.

    ``sub`` is a :class:`~autograder.load.Submission`; ``outcome`` the
    :class:`~autograder.sandbox.Outcome` of running it (None when nothing ran);
    ``seed`` the input seed the probe used. Raises whatever a reply of a shape
    the hidden tests cannot read raises (the pipeline makes that an ``error``).
    """
    if sub.unreadable:
        return _failed(sub, sub.unreadable, "wrong exercise" if sub.other_exercise else "unreadable")
    if not sub.attempted:
        return _failed(sub, "not attempted: the answer cell is still the released stub",
                       "not attempted")
    if outcome.status != "ok":
        return _failed(sub, outcome.message, outcome.status)
    reply = outcome.reply
    obs = reply["obs"] if isinstance(reply.get("obs"), dict) else {}
    errors = reply.get("cell_errors")
    notes = [str(e)[:500] for e in errors][:10] if isinstance(errors, list) else []
    if "missing" in obs or "probe_error" in obs:
        reason = (f"`{obs['missing']}` is not defined" if "missing" in obs
                  else f"the tests could not run: {obs['probe_error']}")
        # the cause (a cell that failed, e.g. a syntax error) before its effect
        return _failed(sub, "; ".join(notes + [reason]), "incomplete")
    found = checks(sub.exercise, obs, seed)
    passed = sum(c.status == "passed" for c in found)
    output = (f"All {passed} checks passed." if passed == len(found)
              else f"{passed} of {len(found)} checks passed.")
    if isinstance(obs.get("stopped"), dict) and passed < len(found):
        where = where_text(obs["stopped"].get("where"))
        output += (f" One error stopped every call: {str(obs['stopped'].get('error'))[:500]}"
                   + (f" at {where}" if where else "") + " (the first failed check says more).")
    if notes:
        output += " Problems while running your code: " + "; ".join(notes) + "."
    return found, output + "".join(f" Note: {n}." for n in sub.notes), "graded"


def _failed(sub, message, status):
    return not_run(sub.exercise), message, status
