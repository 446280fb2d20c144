"""The exercise page in a real Chromium: pick the notebook, submit, read the feedback.

The session's site build (``built_site``: the strict, incremental command of
``make book``) is served on a free port; the page talks to the test service
through CORS, found via ``?grader=<url>`` given once, on another page of the
site (as in the URL ``make serve`` prints), and remembered.
"""
import datetime
import functools
import http.server
import json
import threading
import time
from urllib.parse import urlparse

import pytest
from nbgrader.api import Gradebook

from autograder import exercises
from tests.processes import free_port
from tests.service.submissions import notebook_with

PAGE = "book/exercises/update_with_donate.html"


@pytest.fixture(scope="module")
def site(built_site, site_socket):
    """The session's site build, served at http://127.0.0.1:<site_port>/ from the socket
    the session holds for it (a thread of this process: no other server can answer there)."""
    handler = functools.partial(Quiet, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(site_socket.getsockname(), handler,
                                             bind_and_activate=False)
    server.socket.close()
    server.socket = site_socket
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{site_socket.getsockname()[1]}/"
    server.shutdown()
    thread.join()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # a line per request is noise in the test's output
        pass


def test_submit_from_the_exercise_page(site, service, browser, course_template, tmp_path):
    page = browser.new_page()
    requests, errors, crashes = [], [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: crashes.append(f"{exc}\n{exc.stack}"))
    page.goto(f"{site}book/intro.html?grader={service.url}")
    page.goto(f"{site}{PAGE}")

    for sample, score in (("reference", "10 / 10"), ("wrong_arithmetic", "7 / 10")):
        path = tmp_path / f"{sample}.ipynb"
        path.write_text(json.dumps(notebook_with(course_template, sample)))
        page.fill("#grader-learner", "web-learner")
        page.set_input_files("#grader-file", str(path))
        page.click("#grader-submit")
        try:
            page.wait_for_function(  # graded, or refused: either ends the wait
                "() => /^(Graded|Not graded)/.test(document.querySelector('#grader-status')"
                ".textContent)", timeout=300_000)
        except Exception:  # say where it stopped: the page's words, whom it asked, the service's log
            pytest.fail(f"not graded in 300 s; the page says {page.inner_text('#grader-status')!r}; "
                        f"requests: {[u for u in requests if service.url in u or site in u][-8:]}; "
                        f"service log:\n{service.log.read_text()[-2000:]}")
        assert page.inner_text("#grader-status").startswith("Graded."), \
            page.inner_text("#grader-status")
        assert page.inner_text(".grader-score").startswith(f"Score: {score}")

    feedback = page.inner_text("#grader-feedback")
    assert "\u2717 values: the result equals state + delta (0 / 2)" in feedback
    assert "Checked: update_with_donate(state, delta)" in feedback
    assert "\u2713 state is donated (2 / 2)" in feedback
    assert not [c for c in crashes if "grader.js" in c], crashes  # the theme's are not ours
    # (the theme logs unrelated console errors; a CORS refusal would show here)
    assert not [e for e in errors if "CORS" in e or "Access-Control" in e], errors
    hosts = {urlparse(u).hostname for u in requests if not u.startswith(("data:", "blob:"))}
    assert hosts == {"127.0.0.1"}, hosts  # the page loads nothing from elsewhere

    # The service's own words reach the page when it refuses a submission.
    bad = tmp_path / "not_a_notebook.ipynb"
    bad.write_text('{"cells": "none"}')
    page.set_input_files("#grader-file", str(bad))
    page.click("#grader-submit")
    page.wait_for_selector("#grader-status:has-text('Not graded: notebook must be')",
                           timeout=60_000)
    page.close()


# Each animation frame, the Submit button's top edge while it shows (px from the page's top).
WATCH_BUTTON = """
window.__submitTops = [];
(function watch() {
  var b = document.querySelector("#grader-submit");
  if (b && b.offsetParent) {
    var top = Math.round(b.getBoundingClientRect().top + window.scrollY);
    if (window.__submitTops[window.__submitTops.length - 1] !== top) window.__submitTops.push(top);
  }
  requestAnimationFrame(watch);
})();
"""


def test_the_submit_button_stays_under_the_pointer(site, new_service, site_port, browser, tmp_path):
    """Lines the service fills in later (the due date, the learner's standing) never move the
    Submit button once it shows: a press held while the standing arrives still submits."""
    service = new_service(site_port=site_port)
    with Gradebook(f"sqlite:///{service.course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("update_with_donate", duedate=datetime.datetime(2099, 1, 1))
    service.start()
    page = browser.new_page()
    page.add_init_script(WATCH_BUTTON)
    page.goto(f"{site}book/intro.html?grader={service.url}")
    page.route("**/api/deadline*", lambda route: (time.sleep(1), route.continue_()))  # a slow reply
    page.goto(f"{site}{PAGE}")
    page.locator(".grader-deadline").filter(has_text="Due 2099-01-01 00:00 UTC").wait_for()
    bad = tmp_path / "not_a_notebook.ipynb"
    bad.write_text('{"cells": "none"}')  # refused at once: no grading needed
    page.fill("#grader-learner", "steady-hand")
    page.set_input_files("#grader-file", str(bad))
    page.locator("#grader-submit").scroll_into_view_if_needed()
    box = page.locator("#grader-submit").bounding_box()  # in the viewport's pixels
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()  # the learner id field loses focus: its standing is asked for now
    page.locator(".grader-standing").filter(has_text="No graded submission yet").wait_for()
    page.mouse.up()
    page.wait_for_selector("#grader-status:has-text('Not graded: notebook must be')",
                           timeout=30_000)
    tops = page.evaluate("window.__submitTops")
    assert len(tops) == 1, f"the Submit button moved: its top edge went {tops} px"
    page.close()


@pytest.mark.parametrize("exercise", exercises.names())
def test_every_exercise_page_has_a_submit_form(site, browser, exercise):
    page = browser.new_page()
    page.goto(f"{site}book/exercises/{exercise}.html")
    form = page.locator(f"[data-grader-exercise={exercise}] form")
    # grader.js draws the form once course-run.js has asked for make serve's servers
    form.locator("#grader-learner").wait_for(state="visible", timeout=30_000)
    assert form.locator("#grader-file").count() == 1
    assert form.locator("#grader-submit").is_visible()
    page.close()


def _submit(page, path):
    page.set_input_files("#grader-file", str(path))
    page.click("#grader-submit")


def _graded(page):
    page.wait_for_function(
        "() => /^(Graded|Not graded)/.test(document.querySelector('#grader-status').textContent)",
        timeout=300_000)
    return page.inner_text("#grader-status")


@pytest.mark.parametrize("rule", ["best", "latest"])
def test_the_exercise_page_shows_the_standing_and_warns_before_a_lower_grade(
        site, new_service, site_port, browser, course_template, tmp_path, rule):
    """After a reload the page shows the recorded grade; an upload of the unedited notebook
    is held back with a warning (and, under "latest", any upload once a grade is recorded)."""
    service = new_service(site_port=site_port, recorded=rule).start()
    files = {}
    for sample in ("reference", "unattempted", "wrong_arithmetic"):
        files[sample] = tmp_path / f"{sample}.ipynb"
        files[sample].write_text(json.dumps(notebook_with(course_template, sample)))
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site}book/intro.html?grader={service.url}&learner=ada")
    page.goto(f"{site}{PAGE}")
    page.wait_for_selector(".grader-standing:has-text('No graded submission yet')")
    _submit(page, files["reference"])
    assert _graded(page).startswith("Graded."), page.inner_text("#grader-status")

    page.reload()
    standing = page.locator(".grader-standing")
    standing.filter(has_text="Your recorded grade: 10 / 10").wait_for()
    said_rule = page.inner_text(".grader-rule")  # the service's rule, not the default
    assert ("never lowers it" if rule == "best" else "even if it scores less") in said_rule
    assert "default" not in said_rule, said_rule

    before = len(service.rows())
    _submit(page, files["unattempted"])  # the file as handed out: held back, said why
    page.wait_for_selector("#grader-status:has-text('still the released stub')")
    said = page.inner_text("#grader-status")
    assert ("stays 10 / 10" if rule == "best" else "replace your recorded 10 / 10") in said, said
    assert len(service.rows()) == before  # nothing was sent

    _submit(page, files["wrong_arithmetic"])
    if rule == "latest":  # a grade would be replaced whatever the upload scores: asked first
        page.wait_for_selector("#grader-status:has-text('replaces your recorded 10 / 10')")
        assert len(service.rows()) == before
        page.click("#grader-submit")  # pressed again: sent
    assert _graded(page).startswith("Graded.")
    want = "Your recorded grade: 10 / 10" if rule == "best" else "Your recorded grade: 7 / 10"
    standing.filter(has_text=want).wait_for()
    if rule == "best":  # the standing is read again after "Graded." shows: the old one first
        standing.filter(has_text="Latest graded submission: 7 / 10").wait_for()
        assert want in standing.inner_text()
    context.close()


KEY = "a-key-of-this-make-serve-run-0123456789"


def test_under_make_serve_the_history_and_grades_survive_a_reload(
        site, new_service, site_port, browser, course_template, tmp_path):
    """``--auth local`` as make serve runs it: the page holds the printed key and names no
    learner; after a reload it lists every submission with its score and feedback, and the
    exercise index shows the recorded grade. A browser without the key sees none of it."""
    service = new_service(site_port=site_port, auth="local",
                          env={"GRADER_LEARNER": "ada", "GRADER_TOKEN": KEY}).start()
    context = browser.new_context()
    page = context.new_page()
    bodies = []
    page.on("request", lambda r: bodies.append(r.post_data) if r.method == "POST" else None)
    page.goto(f"{site}book/intro.html?grader={service.url}&grader_token={KEY}")
    page.goto(f"{site}{PAGE}")
    page.locator(".grader-as strong").filter(has_text="ada").wait_for()
    assert page.locator("#grader-learner").count() == 0
    scores = []  # as the page showed each when it was graded: "<score> / <max>"
    for sample in ("reference", "wrong_arithmetic"):
        path = tmp_path / f"{sample}.ipynb"
        path.write_text(json.dumps(notebook_with(course_template, sample)))
        _submit(page, path)
        assert _graded(page).startswith("Graded."), page.inner_text("#grader-status")
        scores.append(page.inner_text(".grader-score").split("Score: ")[1].split(" (")[0])
    assert scores[0] == "10 / 10" and scores[1] != scores[0], scores
    assert all('"learner"' not in b for b in bodies if b), "the page named a learner"

    page.reload()
    history = page.locator(".grader-history")
    history.filter(has_text="Your submissions (2)").wait_for()
    items = history.locator("li.grader-history-item")
    assert [items.nth(i).locator("summary").inner_text().split(": ")[-1] for i in range(2)] == \
        scores[::-1]  # newest first
    items.nth(0).locator("summary").click()
    feedback = items.nth(0)
    assert f"Score: {scores[1]}" in feedback.inner_text()
    failed = feedback.locator(".grader-test.grader-failed")  # each failed check, with what it found
    assert failed.count() >= 1 and failed.first.locator(".grader-test-output").inner_text().strip()
    page.locator(".grader-standing").filter(has_text="Your recorded grade: 10 / 10").wait_for()
    said_rule = page.inner_text(".grader-rule")
    assert "never lowers it" in said_rule and "default" not in said_rule, said_rule

    page.goto(f"{site}book/exercises/index.html")
    grades = page.locator(".grader-progress-table")
    grades.wait_for()
    row = grades.locator("tr", has=page.locator("a", has_text="update_with_donate"))
    assert row.locator(".grader-progress-grade").inner_text().startswith("10 / 10")
    other = grades.locator("tr", has=page.locator("a", has_text="donation_report"))
    assert other.locator(".grader-progress-grade").inner_text() == "no graded submission yet"
    context.close()

    # Another browser, without the key (and naming ada in the URL): nothing of ada's.
    stranger = browser.new_context()
    page = stranger.new_page()
    page.goto(f"{site}book/intro.html?grader={service.url}&learner=ada")
    page.goto(f"{site}{PAGE}")
    page.wait_for_selector("#grader-status:has-text('does not hold the key')")
    assert page.inner_text(".grader-history") == ""
    assert "recorded grade" not in page.inner_text(".grader-standing")
    page.goto(f"{site}book/exercises/index.html")
    page.wait_for_selector("[data-grader-progress]:has-text('does not hold the key')")
    assert "10 / 10" not in page.inner_text("[data-grader-progress]")
    stranger.close()


def test_without_a_grading_service_the_page_says_the_rule_is_the_default(site, browser):
    page = browser.new_page()
    page.goto(f"{site}book/intro.html?grader=http://127.0.0.1:{free_port()}")  # nothing there
    page.goto(f"{site}{PAGE}")
    rule = page.locator(".grader-rule")
    rule.filter(has_text="Grading rule").wait_for()
    assert "your best graded submission is your grade" in rule.inner_text()  # defaults.RECORDED
    assert "the course's default: no grading service answered" in rule.inner_text()
    page.close()
