"""The class page's numbers and HTML, from a real store: failing observations
grouped by their structure (distinct mistakes apart), pass rates, progress, plots that say
what they show in text, and learners' words escaped."""
import json
import re
from html import escape, unescape

import pytest

from autograder.judge import hidden_tests
from autograder.results import CheckResult, GradingResult
from autograder.service.class_views import class_page, class_stats
from autograder.service.store import Caps, Store
from tests.course import REPO
from tests.grading.helpers import ASSIGNMENT


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "grading.db")
    yield store
    store.engine.dispose()


def _graded(store, learner, got):
    """A done submission whose first check failed with ``got`` (a whole feedback text, or
    the words after ``Got:``; None: all passed)."""
    if got is not None and "Got:" not in got:
        got = f"Checked: f(x)\nExpected: y\nGot: {got}\nHint: h"
    sub_id = store.admit(learner, ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))[0]
    store.claim("host:1:0", lease=30)
    checks = [CheckResult(n, t, 0 if got is not None and i == 0 else p, p,
                          "failed" if got is not None and i == 0 else "passed",
                          (got or "") if i == 0 else "")
              for i, (n, t, p) in enumerate(hidden_tests(ASSIGNMENT))]
    result = GradingResult(checks, "", "graded", "d", 1.0)
    assert store.finish(sub_id, "host:1:0", result.to_record())
    return result


GOLDEN = json.loads((REPO / "tests" / "grading" / "golden" / "service-samples.json").read_text())


def golden(sample, check):
    """The feedback (``output``) a sample got for a check, as the grading service recorded it."""
    tests = GOLDEN[sample]["reply"]["result"]["tests"]
    return next(t["output"] for t in tests if t["name"] == check)


def other_inputs(output):
    """``output`` as another run with other random inputs would word it: other float
    values, another index, another count of elements that differ."""
    output = re.sub(r"\d+\.\d+", lambda m: str(round(float(m[0]) * 1.7 + 0.31, 4)), output)
    output = re.sub(r"at index \d+", "at index 3", output)
    return re.sub(r"\d+ of (\d+) elements", r"7 of \1 elements", output)


DONATES = "state is donated"
BYTES = "aliased_bytes equals alias_size_in_bytes"
LEAVES = "each leaf's path, shape, dtype and nbytes"
REPEATED = "repeated updates with rebinding accumulate"


def test_distinct_mistakes_in_real_feedback_stay_apart():
    # no donation against donating the wrong argument: 0 and 1 of the helper's 2 arguments
    none, wrong = (class_stats.observation(golden(s, DONATES))
                   for s in ("no_donation/update_with_donate", "delta_donated/update_with_donate"))
    assert none == "Got: jit__lambda donates 0 of its 2 arguments; state still alive after the call"
    assert wrong == "Got: jit__lambda donates 1 of its 2 arguments; state still alive after the call"
    # five wrong aliased byte totals, five mistakes (float bytes, an output index, ...)
    totals = {class_stats.observation(golden(f"{s}/donation_report", BYTES)) for s in (
        "all_aliased", "element_count_rule", "float_bytes", "output_index", "shape_dtype_rule")}
    # (the totals follow the golden capture's seeded inputs: five distinct numbers)
    assert len(totals) == 5 and all(re.fullmatch(r"Got: \d+", t) for t in totals), totals
    # the shape of the deleted buffer says which one was read
    shapes = {class_stats.observation(golden(s, "train runs without reading a deleted buffer"))
              for s in ("as_given/fix_training_loop", "donates_both/fix_training_loop")}
    assert len(shapes) == 2


def test_one_mistake_with_other_inputs_or_layout_is_one_observation():
    for sample, check in (("wrong_arithmetic/update_with_donate", REPEATED),
                          ("wrong_arithmetic/update_with_donate", "values: the result equals state + delta"),
                          ("loss_after_update/fix_training_loop", "losses equal a reference run")):
        output = golden(sample, check)
        assert other_inputs(output) != output
        assert class_stats.observation(other_inputs(output)) == class_stats.observation(output)
    assert class_stats.observation(golden("wrong_arithmetic/update_with_donate", REPEATED)) == (
        "Got: # of 32 elements differ by more than # + # x |expected|; the largest difference "
        "is # (relative #) at index #: got #, expected #")
    crash = golden("output_by_leaf_index/donation_report", LEAVES)
    moved = re.sub(r"at line \d+ of your cell: `", "at line 12 of your cell: `rows[i] = ", crash)
    assert moved != crash
    assert class_stats.observation(moved) == class_stats.observation(crash) == (
        "Got: it raised IndexError: list index out of range at line # of your cell: `\u2026`")


@pytest.mark.parametrize("output,expected", [
    ("Checked: a\nGot: jit__lambda donates 0 of its 2 arguments", "Got: jit__lambda donates 0 of its 2 arguments"),
    ("Got: max error 1.5e-03 at index (3, 4)", "Got: max error # at index #"),
    ("Got: float32[2,3] in 0.25 s.", "Got: float32[2,3] in # s."),
    ("no Got line here 12\nsecond", "no Got line here 12"),
    ("", ""),
])
def test_an_observation_is_its_got_line_with_varying_numbers_blanked(output, expected):
    assert class_stats.observation(output) == expected


def test_learners_with_the_same_mistake_are_one_group_and_other_mistakes_apart(store):
    none, wrong = (golden(s, DONATES) for s in ("no_donation/update_with_donate",
                                                  "delta_donated/update_with_donate"))
    for who, output in (("ada", none), ("bob", none), ("cy", wrong), ("dee", None)):
        _graded(store, who, output)
    data = class_stats.class_data(store, "best")
    ex = data["exercises"][ASSIGNMENT]
    first = ex["checks"][0]
    assert (first["passed"], first["learners"]) == (1, 4)
    assert first["groups"] == [
        {"observation": class_stats.observation(none), "count": 2, "learners": ["ada", "bob"]},
        {"observation": class_stats.observation(wrong), "count": 1, "learners": ["cy"]}]
    assert all(c["groups"] == [] for c in ex["checks"][1:])
    full = ex["max_score"]
    assert sorted(ex["scores"]) == [full - 2] * 3 + [full] and len(ex["times"]) == 4
    assert data["progress"]["dee"]["exercises"][ASSIGNMENT] == {"recorded": full, "max_score": full, "done": True}
    assert data["progress"]["ada"]["exercises"][ASSIGNMENT]["done"] is False


def test_the_page_escapes_learners_and_labels_its_plots(store):
    _graded(store, "eve", "<script>alert(1)</script> 3 times")
    _graded(store, "ada", None)
    html = class_page.render(class_stats.class_data(store, "best"))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; 3 times" in html
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


def test_an_api_process_imports_matplotlib_only_to_draw_the_page():
    """The plots' matplotlib (about half a second of CPU) is imported when the class page
    is first drawn, not by every grading service and worker at start."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, autograder.service.api.app, autograder.service.commands.worker; "
         "print(sorted(m for m in sys.modules if m.partition('.')[0] == 'matplotlib'))"],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


NOT_GRADED = {  # the result's status and output, as the grader words them (judge.verdict)
    "unedited stub": ("not attempted", "not attempted: the answer cell is still the released stub"),
    "syntax error": ("incomplete", "SyntaxError: invalid syntax (line 3); `update` is not defined"),
    "wrong function name": ("incomplete", "`update` is not defined"),
}


def _not_graded(store, learner, status, output):
    """A done submission whose checks did not run, for ``output``'s reason."""
    from autograder.judge import not_run
    store.admit(learner, ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))
    claimed = store.claim("host:1:0", lease=30)
    result = GradingResult(tuple(not_run(ASSIGNMENT)), output, status, "d", 1.0)
    assert store.finish(claimed.id, "host:1:0", result.to_record())


def test_a_notebook_that_could_not_be_graded_shows_why_not_not_run_per_check(store):
    for i, (status, output) in enumerate(NOT_GRADED.values()):
        _not_graded(store, f"learner{i}", status, output)
    _graded(store, "dee", golden("no_donation/update_with_donate", DONATES))
    ex = class_stats.class_data(store, "best")["exercises"][ASSIGNMENT]
    rows = {r["learner"]: r for r in ex["learners"]}
    for i, (_, output) in enumerate(NOT_GRADED.values()):
        assert rows[f"learner{i}"]["not_graded"] == output and rows[f"learner{i}"]["failed"] == []
    assert sorted(g["observation"] for g in ex["not_graded"]) == sorted(
        o for _, o in NOT_GRADED.values())
    assert all(g["learners"] == ["dee"] for c in ex["checks"] for g in c["groups"])  # no "Not run."
    html = class_page.render(class_stats.class_data(store, "best"))
    assert "Not run." not in html and "Could not be graded: 3" in html
    for _, output in NOT_GRADED.values():
        assert f"Not graded: {escape(output)}" in html


def test_masked_numbers_read_as_a_marked_n_with_a_legend(store):
    _graded(store, "ada", "values differ: largest difference is 0.25 at index 3")
    html = class_page.render(class_stats.class_data(store, "best"))
    assert ('difference is <var class="masked" title="a number that differs from learner to '
            'learner">n</var> at index <var class="masked"') in html
    shown = re.findall(r'<code class="observation">(.*?)</code>', html)
    assert 'class="legend"' in html and shown and not any("#" in o for o in shown), shown


@pytest.mark.parametrize("char", ["'", '"', "<", ">", "&", "&#x27;"])
def test_a_masked_observation_reads_back_as_written_whatever_it_quotes(store, char):
    """Every character HTML escapes (its escape of a quote holds a ``#``) comes back as
    written around the marked numbers."""
    _graded(store, "ada", f"the loop{char}s first call differs at index 3")
    html = class_page.render(class_stats.class_data(store, "best"))
    shown = re.findall(r'<code class="observation">(.*?)</code>', html)
    # as a browser reads it: the text around each mark unescaped on its own
    read = ["#".join(unescape(t) for t in re.split(r'<var class="masked"[^>]*>n</var>', o))
            for o in shown]
    assert read == [f"Got: the loop{char}s first call differs at index #"], read


def test_exercises_in_course_order_and_an_empty_one_draws_no_plot(store):
    from autograder.exercises import names
    from autograder.service.class_views.roster import Roster
    _graded(store, "ada", None)
    course = Roster(learners={"ada": True}, exercises=tuple(sorted(names())),
                    points=dict.fromkeys(names(), 10.0))
    data = class_stats.class_data(store, "best", roster=course)
    assert list(data["exercises"]) == list(names())  # the registry's order, not by name
    html = class_page.render(data)
    sections = re.findall(r'<section class="exercise" id="ex-([^"]+)".*?</section>', html, re.S)
    assert [s.replace("-", "_") for s in sections] == list(names())
    for name in names()[1:]:  # nobody submitted: a plain sentence, no axes around nothing
        section = html.split(f'id="ex-{name.replace("_", "-")}"')[1].split("</section>")[0]
        assert "No submissions yet." in section and "<svg" not in section


def test_a_refusal_of_the_class_page_is_a_page():
    page = class_page.refusal("this is the instructors' view of the class")
    assert page.startswith("<!doctype html>") and "<h1>Instructors only</h1>" in page
    assert "This is the instructors&#x27; view of the class." in page


class _SignsInFirst(__import__("autograder.service.api.local_auth", fromlist=["x"]).LocalIdentity):
    """make serve's identity with somewhere to sign in, as the hub's has (HubIdentity): a
    browser's page view without a sign-in is sent there, as on an instructor's first visit."""

    def sign_in_url(self, next_path):
        return f"/login?next={next_path}"


def _visit(tmp_path, identity, headers):
    """``GET /class`` from the service's tornado application in-process: ``(status,
    Content-Type, body, errors logged)``."""
    import asyncio
    import logging
    import socket

    import tornado.httpclient
    import tornado.httpserver

    from autograder import defaults
    from autograder.service.api.app import Settings, make_app
    from autograder.service.gradebook.mirror import Mirror

    logged = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append

    async def run():
        store = Store(tmp_path / "grading.db")
        settings = Settings(max_bytes=2**20, caps=Caps(), timeout=20.0,
                            address="http://127.0.0.1:0", recorded=defaults.RECORDED, limits={},
                            identity=identity)
        app = make_app(store, None, settings, Mirror(tmp_path / "course"))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets([sock])
        try:
            reply = await tornado.httpclient.AsyncHTTPClient().fetch(
                f"http://127.0.0.1:{sock.getsockname()[1]}/class", raise_error=False,
                follow_redirects=False, headers=headers)
            await asyncio.sleep(0.1)  # an error in prepare is logged after the answer
        finally:
            server.stop()
            store.engine.dispose()
        return reply

    logging.getLogger().addHandler(handler)
    try:
        reply = asyncio.run(run())
    finally:
        logging.getLogger().removeHandler(handler)
    return reply.code, reply.headers.get("Content-Type"), reply.body.decode(), logged


KEY = "k" * 8 + "-a-key-of-this-run-0123"


def test_a_browser_not_signed_in_is_sent_to_sign_in_without_an_error(tmp_path):
    """An instructor's first visit: no sign-in yet, so the page view goes to the sign-in,
    and nothing raises on the way (an AttributeError on ``person`` did, logged)."""
    code, _, _, logged = _visit(tmp_path, _SignsInFirst("ins", KEY), {"Sec-Fetch-Mode": "navigate"})
    assert code == 302 and logged == [], [r.getMessage() for r in logged]


def test_a_learner_opening_the_class_page_gets_a_page_saying_why(tmp_path):
    code, kind, body, logged = _visit(tmp_path, _SignsInFirst("ada", KEY),
                                      {"Authorization": f"token {KEY}"})
    assert (code, kind) == (403, "text/html; charset=utf-8") and logged == []
    assert "<h1>Instructors only</h1>" in body and "instructors&#x27; view of the class" in body
