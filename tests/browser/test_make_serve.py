"""A learner's first hour, as the README tells it: ``make serve``, then the printed URLs.

``make serve`` is started as the README says (after the session's build, so its
own build step only releases the exercises and finds the site up to date), with
the environment of a fresh login shell: no JUPYTER_TOKEN, no ports, no
PYTHONPATH. It uses the default ports, so the test holds the lock every
default-port test takes. From its output the test reads the URLs and follows them
in Chromium exactly as printed: the site, a lesson whose "Run the code on this
page" connects and runs a cell, the exercise page whose "Open the notebook in
JupyterLab" opens the notebook, the submit form grading a notebook as the one
learner (its history still there after a reload, its grade on the exercise index),
and the JupyterLab URL to its file browser. The terminal must show the
URLs last and stay quiet. (The submission lands in the checkout's own grading.db
and exercises/ gradebook, as a learner's would.)
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from autograder import defaults
from tests.book.sitebuild import REPO
from tests.browser.pages import Watched, screenshot
from tests.grading.helpers import SAMPLES

LOCK = "/tmp/course-default-ports.lock"
DEFAULT_PORTS = (defaults.PORT, defaults.GRADER_PORT, defaults.JUPYTER_PORT)
WAIT_S = 1200  # give-up times (make serve releases and checks the build), not timing assertions
WAIT_MS = 180_000


def login_environment() -> dict:
    """What a learner's fresh shell has: no course variable, no PYTHONPATH."""
    keep = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Terminal:
    """``make serve``'s output, read as it comes."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.lines = proc, []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str) -> re.Match:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for line in self.lines:
                if match := re.search(pattern, line):
                    return match
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"make serve never printed {pattern!r}:\n" + "\n".join(self.lines))


@pytest.fixture
def make_serve(built_site):
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held until the servers are gone
        busy = [p for p in DEFAULT_PORTS if _listening(p)]
        assert not busy, f"something else listens on the default ports {busy}"
        proc = subprocess.Popen(["make", "serve"], cwd=REPO, env=login_environment(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        terminal = Terminal(proc)
        try:
            yield terminal
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the terminal
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            deadline = time.monotonic() + 30
            while any(_listening(p) for p in DEFAULT_PORTS) and time.monotonic() < deadline:
                time.sleep(0.3)
            left = [p for p in DEFAULT_PORTS if _listening(p)]
            assert not left, (f"ports still served after Ctrl-C: {left}; make serve's exit status "
                              f"{proc.returncode}, its last lines:\n" + "\n".join(terminal.lines[-15:]))


def _run_a_lesson_cell(page):
    bar = page.locator("nav.course-run")
    bar.locator("button.course-run-here").click()
    page.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    status = bar.locator(".course-run-status").inner_text()
    assert status.startswith("Ready"), status
    cell = page.locator("article div.cell").filter(has=page.locator(".thebe-cell")).first
    cell.locator(".CodeMirror").evaluate(
        "(el) => el.CodeMirror.setValue('print(\"first hour\", 6 * 7)')")
    cell.locator("button.thebe-run-button").click()
    cell.locator(".cell_output .jp-OutputArea-output").filter(has_text="first hour 42").first.wait_for(
        timeout=WAIT_MS)


def test_the_printed_urls_lead_to_a_running_course(make_serve, browser, tmp_path):
    site_url = make_serve.wait_for(r"course site: (http\S+)").group(1)
    lab_url = make_serve.wait_for(r"learner JupyterLab: (http\S+)").group(1)
    printed = list(make_serve.lines)
    # the URLs are the last thing printed, and nothing else follows while the learner works;
    # before them, make's own "==>" steps only (the build's chatter is in _build/logs/book.log)
    assert printed[-1].endswith(site_url) and any(line.endswith(lab_url) for line in printed[-3:]), printed
    assert [line for line in printed if not line.startswith("==> ")] == [], printed
    assert not [line for line in printed if "file://" in line], printed
    learner = parse_qs(urlsplit(site_url).query)["learner"][0]

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        watched = Watched(context.new_page())
        page = watched.page
        page.goto(site_url, wait_until="networkidle")
        assert "Buffer donation in JAX" in page.inner_text("article h1")

        # a lesson, reached by its link, runs its code in the page
        page.locator("nav.bd-docs-nav a[href$='donate_argnums.html']").first.click()
        page.wait_for_url(re.compile(r"lessons/donate_argnums\.html"))
        _run_a_lesson_cell(page)
        screenshot(page, "make-serve-lesson-running")

        # the exercise page opens its notebook in JupyterLab, signed in by the token
        page.locator("nav.bd-docs-nav a[href$='exercises/index.html']").first.click()
        grades = page.locator(".grader-progress-table")  # the learner's grades, asked of the service
        grades.wait_for(timeout=WAIT_MS)
        page.locator("nav.bd-docs-nav a[href$='update_with_donate.html']").first.click()
        page.wait_for_url(re.compile(r"exercises/update_with_donate\.html"))
        with context.expect_page() as popup:
            page.locator("nav.course-run a.course-run-lab").click()
        notebook = popup.value
        notebook.locator(".jp-NotebookPanel:visible .jp-MarkdownCell",
                         has_text="Exercise: update_with_donate").first.wait_for(timeout=WAIT_MS)
        notebook.close()

        # the submit form grades a notebook as the one learner, without asking who
        form = page.locator("[data-grader-exercise=update_with_donate]")
        assert form.locator("input[name=learner]:visible").count() == 0
        assert learner in form.locator(".grader-as").inner_text()
        released = json.loads((REPO / "exercises" / "release" / "update_with_donate" /
                               "update_with_donate.ipynb").read_text())
        answer = next(c for c in released["cells"] if c["cell_type"] == "code")
        answer["source"] = (SAMPLES / "reference.py").read_text()
        upload = tmp_path / "update_with_donate.ipynb"
        upload.write_text(json.dumps(released))
        history = page.locator(".grader-history .grader-history-title")  # "Your submissions (n)"
        history.wait_for(timeout=WAIT_MS)
        listed = page.locator(".grader-history li.grader-history-item").count()  # a make serve run keeps its grades
        page.set_input_files("#grader-file", str(upload))
        page.click("#grader-submit")
        page.wait_for_function("() => /^(Graded|Not graded)/.test("
                               "document.querySelector('#grader-status').textContent)", timeout=WAIT_MS)
        assert page.inner_text("#grader-status").startswith("Graded."), page.inner_text("#grader-status")
        assert page.inner_text(".grader-score").startswith("Score: 10 / 10")
        screenshot(page, "make-serve-graded")
        # "Graded." shows before the page reads the history and standing again; a reload
        # before those answer aborts them (net::ERR_ABORTED), the reader's doing, not a
        # fault: a reader reads first, and the history lists the grade without a reload
        history.filter(has_text=f"({listed + 1})").wait_for(timeout=WAIT_MS)
        page.locator("#grader-submit:enabled").wait_for(timeout=WAIT_MS)  # the standing's reply is in
        # after a reload, the submission and its feedback are still there; the index has the grade
        page.reload(wait_until="networkidle")  # its grades asked and answered before we move on
        page.locator(".grader-history").filter(has_text="Your submissions").wait_for(timeout=WAIT_MS)
        assert "10 / 10" in page.locator(".grader-history li").first.locator("summary").inner_text()
        page.goto(page.url.split("?")[0].replace("update_with_donate.html", "index.html"))
        row = grades.locator("tr", has=page.locator("a", has_text="update_with_donate"))
        row.locator(".grader-progress-grade").filter(has_text="10 / 10").wait_for(timeout=WAIT_MS)
        assert not watched.problems, watched.problems

        # JupyterLab's URL, as printed, opens its file browser (not the login page)
        lab = Watched(context.new_page())
        lab.page.goto(lab_url)
        # (the workspace folder, or the exercise folder JupyterLab remembers from above)
        listing = lab.page.locator("#filebrowser .jp-DirListing-content")
        listing.locator(".jp-DirListing-item", has_text="update_with_donate").first.wait_for(timeout=WAIT_MS)
        assert "/login" not in lab.page.url
        screenshot(lab.page, "make-serve-jupyterlab")
    finally:
        context.close()
    time.sleep(2)  # anything a server logs now must go to its log file, not the terminal
    assert make_serve.lines == printed, make_serve.lines[len(printed):]
