"""The instructors' class view and a learner's listing read the stored typed results
(and results stored before results were typed) in Gradescope's shapes."""
import pytest

from autograder.judge import hidden_tests
from autograder.results import CheckResult, GradingResult
from autograder.service.api.classroom import listing
from autograder.service.class_views.class_view import summary
from autograder.service.store import Caps, Store
from tests.grading.helpers import ASSIGNMENT


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "grading.db")
    yield store
    store.engine.dispose()


def _graded(store, learner, passed, typed=True):
    """One done submission whose checks listed in ``passed`` passed."""
    sub_id = store.admit(learner, ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))[0]
    store.claim("host:1:0", lease=30)
    result = GradingResult([CheckResult(n, t, p if n in passed else 0, p,
                                        "passed" if n in passed else "failed", "")
                            for n, t, p in hidden_tests(ASSIGNMENT)], "", "graded", "d", 1.0)
    assert store.finish(sub_id, "host:1:0", result.to_record() if typed else result.to_gradescope())
    return sub_id, result


def test_pass_rates_and_feedback_come_from_the_latest_results(store):
    names = [n for n, _, _ in hidden_tests(ASSIGNMENT)]
    _graded(store, "ada", set())
    ada_id, ada = _graded(store, "ada", set(names))  # ada's latest: everything passed
    bob_id, bob = _graded(store, "bob", {names[0]}, typed=False)  # stored as Gradescope's dict
    view = summary(store, "best")[ASSIGNMENT]
    assert view["max_score"] == ada.max_score and view["recorded_rule"] == "best"
    assert view["learners"]["ada"] == {
        "submissions": 2, "recorded": ada.score, "recorded_id": ada_id, "due": None,
        "late_seconds": 0.0, "penalty": 0.0,
        "latest": ada.score, "best": ada.score, "latest_id": ada_id, "not_graded": None,
        "set_by": None,
        "feedback": [{k: t[k] for k in ("name", "status", "score", "max_score", "output")}
                     for t in ada.to_gradescope()["tests"]]}
    assert view["learners"]["bob"]["latest"] == bob.score
    rates = {c["name"]: (c["passed"], c["learners"]) for c in view["checks"]}
    assert rates == {t: (2 if n == names[0] else 1, 2) for n, t, _ in hidden_tests(ASSIGNMENT)}
    person = type("Person", (), {"name": "bob", "instructor": False})()
    [mine] = listing(store, person)["submissions"]
    assert (mine["id"], mine["result"]) == (bob_id, bob.to_gradescope())


@pytest.mark.parametrize("rule,which", [("best", 0), ("latest", 1)])
def test_the_recorded_grade_follows_the_rule(store, rule, which):
    """10/10, then a worse attempt: best keeps the 10, latest records the worse one."""
    names = [n for n, _, _ in hidden_tests(ASSIGNMENT)]
    graded = [_graded(store, "ada", set(names)), _graded(store, "ada", {names[0]})]
    ada = summary(store, rule)[ASSIGNMENT]["learners"]["ada"]
    sub_id, result = graded[which]
    assert (ada["recorded"], ada["recorded_id"]) == (result.score, sub_id)
    assert (ada["best"], ada["latest"]) == (graded[0][1].score, graded[1][1].score)
