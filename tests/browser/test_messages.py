"""What a learner reads when something is wrong, and how the submit form looks.

The in-page runner and the submit form tell "refused" (the server answers, but
not to this page: a stale token, or a site address it does not allow) from "not
running" (nothing answers), and say what to do for each. The form's controls are
drawn in the site's colours, light and dark, not as the browser's defaults.
"""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import quote

import pytest

from tests.book.sitebuild import REPO
from tests.browser.pages import screenshot
from tests.processes import free_port, stop_process

WAIT_MS = 180_000
LESSON = "book/lessons/donate_argnums.html"
EXERCISE = "book/exercises/update_with_donate.html"


@pytest.fixture(scope="module")
def other_site(built_site):
    """The same site, served from an address the course's servers were not started for."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(built_site)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield f"http://127.0.0.1:{port}/"
    stop_process(proc)


def _runner_message(open_page, url):
    page = open_page(url).page
    page.locator("button.course-run-here").click()
    page.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    return page.locator(".course-run-status").inner_text()


def test_the_runner_tells_refused_from_not_running(servers, open_page, other_site):
    jupyter = quote(servers.jupyter, safe="")
    nothing = quote(f"http://127.0.0.1:{free_port()}", safe="")
    down = _runner_message(open_page, f"{servers.site}{LESSON}?jupyter={nothing}&token={servers.token}")
    assert "not running" in down and "make serve" in down and "token" not in down, down
    stale = _runner_message(open_page, f"{servers.site}{LESSON}?jupyter={jupyter}&token=stale")
    assert "refused this page's token" in stale and "printed last" in stale, stale
    elsewhere = _runner_message(open_page, f"{other_site}{LESSON}?jupyter={jupyter}&token={servers.token}")
    assert "does not accept this site" in elsewhere and "not running" not in elsewhere, elsewhere


def _form_message(open_page, url, tmp_path):
    page = open_page(url).page
    notebook = tmp_path / "update_with_donate.ipynb"
    notebook.write_bytes((REPO / "exercises" / "release" / "update_with_donate" /
                          "update_with_donate.ipynb").read_bytes())
    page.set_input_files("#grader-file", str(notebook))
    page.click("#grader-submit")
    # The released notebook as it is: the page first says it would score 0 (grader.js,
    # uploadWarning); pressed again, it is sent.
    page.wait_for_selector("#grader-status:has-text('still the released stub')", timeout=WAIT_MS)
    page.click("#grader-submit")
    page.wait_for_function("() => /^(Graded|Not graded)/.test("
                           "document.querySelector('#grader-status').textContent)", timeout=WAIT_MS)
    return page.inner_text("#grader-status")


def test_the_submit_form_tells_refused_from_not_running(servers, open_page, other_site, tmp_path):
    nothing = quote(f"http://127.0.0.1:{free_port()}", safe="")
    down = _form_message(open_page, f"{servers.site}{EXERCISE}?learner=ada&grader={nothing}", tmp_path)
    assert "not running" in down and "make serve" in down, down
    grader = quote(servers.grader, safe="")
    elsewhere = _form_message(open_page, f"{other_site}{EXERCISE}?learner=ada&grader={grader}", tmp_path)
    assert "does not accept this site" in elsewhere and "not running" not in elsewhere, elsewhere


STYLE = """() => {
    const pick = (el, pseudo) => { const s = getComputedStyle(el, pseudo);
        return {color: s.color, bg: s.backgroundColor, border: s.borderTopColor,
                radius: s.borderTopLeftRadius, font: s.fontFamily}; };
    const q = (sel) => document.querySelector(sel);
    return {site: pick(q('nav.course-run a.course-run-lab')), body: pick(q('article')),
            button: pick(q('#grader-submit')), file: pick(q('#grader-file')),
            picker: pick(q('#grader-file'), '::file-selector-button'),
            page: getComputedStyle(document.body).backgroundColor};
}"""


@pytest.mark.parametrize("dark", [False, True])
def test_the_submit_form_looks_like_the_site(servers, open_page, dark):
    page = open_page(servers.url(EXERCISE), dark=dark).page
    style = page.evaluate(STYLE)
    screenshot(page.locator("[data-grader-exercise]"), f"submit-form-{'dark' if dark else 'light'}")
    for control in ("button", "picker"):  # drawn like the site's "Open in JupyterLab" button
        for key in ("color", "bg", "border", "radius"):
            assert style[control][key] == style["site"][key], (control, key, style)
    assert style["button"]["font"] == style["body"]["font"], style
    assert style["file"]["color"] == style["body"]["color"], style   # readable in dark mode too
    assert style["file"]["bg"] == style["page"], style
