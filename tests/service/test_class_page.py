"""The class page's numbers and HTML, from a real store: failing observations
grouped with their numbers normalised, pass rates, progress, plots that say
what they show in text, and learners' words escaped."""
import pytest

from autograder.judge import hidden_tests
from autograder.results import CheckResult, GradingResult
from autograder.service import class_page, class_stats
from autograder.service.store import Caps, Store
from tests.grading.helpers import ASSIGNMENT


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "grading.db")
    yield store
    store.engine.dispose()


def _graded(store, learner, got):
    """A done submission whose first check failed with ``Got: <got>`` (None: all passed)."""
    sub_id = store.admit(learner, ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))[0]
    store.claim("host:1:0", lease=30)
    checks = [CheckResult(n, t, 0 if got is not None and i == 0 else p, p,
                          "failed" if got is not None and i == 0 else "passed",
                          f"Checked: f(x)\nExpected: y\nGot: {got}\nHint: h" if i == 0 else "")
              for i, (n, t, p) in enumerate(hidden_tests(ASSIGNMENT))]
    result = GradingResult(checks, "", "graded", "d", 1.0)
    assert store.finish(sub_id, "host:1:0", result.to_record())
    return result


@pytest.mark.parametrize("output,expected", [
    ("Checked: a\nGot: jit__lambda donates 0 of its 2 arguments", "Got: jit__lambda donates # of its # arguments"),
    ("Got: max error 1.5e-03 at index (3, 4)", "Got: max error # at index (#, #)"),
    ("Got: float32[2,3] in 0.25 s", "Got: float32[#,#] in # s"),
    ("no Got line here 12\nsecond", "no Got line here #"),
    ("", ""),
])
def test_an_observation_is_its_got_line_with_numbers_normalised(output, expected):
    assert class_stats.observation(output) == expected


def test_the_same_wrong_answer_in_other_numbers_is_one_group(store):
    for who, got in (("ada", "state alive after 1 of 2 donated"), ("bob", "state alive after 0 of 3 donated"),
                     ("cy", "result is None"), ("dee", None)):
        _graded(store, who, got)
    data = class_stats.class_data(store, "best")
    ex = data["exercises"][ASSIGNMENT]
    first = ex["checks"][0]
    assert (first["passed"], first["learners"]) == (1, 4)
    assert first["groups"] == [
        {"observation": "Got: state alive after # of # donated", "count": 2, "learners": ["ada", "bob"]},
        {"observation": "Got: result is None", "count": 1, "learners": ["cy"]}]
    assert all(c["groups"] == [] for c in ex["checks"][1:])
    full = ex["max_score"]
    assert sorted(ex["scores"]) == [full - 2] * 3 + [full] and len(ex["times"]) == 4
    assert data["progress"]["dee"]["exercises"][ASSIGNMENT] == {"recorded": full, "max_score": full, "done": True}
    assert data["progress"]["ada"]["exercises"][ASSIGNMENT]["done"] is False


def test_the_page_escapes_learners_and_labels_its_plots(store):
    _graded(store, "eve", "<script>alert(1)</script> 3 times")
    _graded(store, "ada", None)
    html = class_page.render(class_stats.class_data(store, "best"))
    assert "<script>alert" not in html and "&lt;script&gt;alert(#)&lt;/script&gt; # times" in html
    assert html.count('<svg role="img"') == 3  # pass rates, scores, submissions over time
    assert 'aria-label="pass rate of each check: values: the result equals state + delta: 1 of 2' in html
    assert 'href="./?learner=eve"' in html and "<details>" in html
    assert ">1 / 1</td>" in html  # ada's progress: one exercise of one done
    assert '<td class="late">on time</td>' in html


def test_lesson_runs_are_counted_per_learner_and_shown_in_progress(store):
    store.record_run("ada", "lifetimes", now=10.0)
    store.record_run("ada", "lifetimes", now=20.0)
    store.record_run("bob", "state_tree", now=15.0)
    assert store.runs() == {"ada": {"lifetimes": {"runs": 2, "last_at": 20.0}},
                            "bob": {"state_tree": {"runs": 1, "last_at": 15.0}}}
    _graded(store, "ada", None)
    data = class_stats.class_data(store, "best")
    assert data["progress"]["bob"] == {"exercises": {}, "lessons": {"state_tree": {"runs": 1, "last_at": 15.0}}}
    assert "lifetimes (2\u00d7)" in class_page.render(data)
