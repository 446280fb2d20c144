"""The course site in Chromium: navigation, search, the glued figures and the alias
tables, running a lesson cell in the page (thebe against the learner JupyterLab)."""

from __future__ import annotations

import re
import threading
import time

import pytest
import requests

from tests.book.sitebuild import LESSONS
from tests.browser.pages import Watched, screenshot

WAIT_MS = 180_000  # give-up time for kernels and JupyterLab, not a timing assertion


def test_navigation_reaches_every_lesson(servers, open_page):
    watched = open_page(servers.url("book/intro.html"))
    page = watched.page
    # make serve's intro says how to run the course here, not the hub's text
    assert page.locator(".course-local-only").first.is_visible()
    assert not page.locator(".course-hub-only").first.is_visible()
    for lesson in LESSONS:
        page.locator(f"nav.bd-docs-nav a[href$='{lesson}.html']").first.click()
        page.wait_for_url(re.compile(rf"lessons/{lesson}\.html"))
        assert page.locator("h1:visible").count(), lesson
    page.locator("nav.bd-docs-nav a[href$='exercises/index.html']").first.click()
    page.wait_for_url(re.compile(r"exercises/index\.html"))
    # the index asks the grader for each exercise's standing: a click before those answer
    # aborts them (net::ERR_ABORTED), the reader's doing, not a fault; a reader reads first
    page.wait_for_load_state("networkidle")
    page.locator("nav.bd-docs-nav a[href$='update_with_donate.html']").first.click()
    page.wait_for_url(re.compile(r"exercises/update_with_donate\.html"))
    assert not watched.problems, watched.problems


@pytest.mark.parametrize("width", [1280, 390])
def test_search_finds_donate_argnums(servers, open_page, width):
    watched = open_page(servers.url("book/intro.html"), width=width)
    page = watched.page
    if width < 800:  # on a phone the search button sits in the collapsed header or sidebar
        page.keyboard.press("Control+k")
    else:
        page.locator(".search-button-field:visible").first.click()
    box = page.locator("input[name='q']:visible").first
    box.fill("donate_argnums")
    box.press("Enter")
    page.wait_for_url(re.compile(r"search\.html\?q=donate_argnums"))
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=WAIT_MS)
    hrefs = results.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert any("lessons/donate_argnums.html" in h for h in hrefs), hrefs
    screenshot(page, f"search-donate_argnums-{width}")
    assert not watched.problems, watched.problems


@pytest.mark.parametrize("width,dark", [(1280, False), (390, True)])
def test_glued_figure_and_alias_tables_are_readable(servers, open_page, width, dark):
    for lesson, figure_id in (("lifetimes", "fig-live-trace"), ("state_tree", "fig-alias-map")):
        watched = open_page(servers.url(f"book/lessons/{lesson}.html"), width=width, dark=dark)
        page = watched.page
        figure = page.locator(f"figure#{figure_id} img")
        figure.scroll_into_view_if_needed()
        assert figure.is_visible()
        size = figure.evaluate("img => [img.naturalWidth, img.getBoundingClientRect().width,"
                               " img.getBoundingClientRect().right]")
        assert size[0] > 0, f"{figure_id} did not load"
        assert size[1] >= min(300, width - 60), f"{figure_id} is drawn {size[1]}px wide"
        assert size[2] <= width, f"{figure_id} runs off the screen"
        screenshot(page.locator(f"figure#{figure_id}"), f"{figure_id}-{width}")
        assert not watched.problems, (lesson, watched.problems)
    glued = page.locator("span.pasted-text")
    assert glued.count() > 0 and glued.first.is_visible()

    tree = open_page(servers.url("book/lessons/state_tree.html"), width=width, dark=dark).page
    tables = tree.locator("div.cell_output pre", has_text="alias_size_in_bytes")
    assert tables.count() >= 2, "no per-leaf alias tables on the state tree page"
    for i in range(tables.count()):
        table = tables.nth(i)
        style = table.evaluate("""pre => { const s = getComputedStyle(pre), r = pre.getBoundingClientRect();
            return {font: parseFloat(s.fontSize), overflow: s.overflowX, right: r.right,
                    fg: s.color, bg: s.backgroundColor, wide: pre.scrollWidth > pre.clientWidth,
                    focus: pre.getAttribute('tabindex')}; }""")
        assert style["font"] >= 12, style
        assert style["right"] <= width, f"alias table {i} runs off the screen: {style}"
        if style["wide"]:  # a table wider than a phone scrolls inside its box, by keyboard too
            assert style["overflow"] in ("auto", "scroll") and style["focus"] == "0", style
        assert style["fg"] != style["bg"], style
    screenshot(tables.first, f"alias-table-{width}-{'dark' if dark else 'light'}")
    assert not watched.problems, watched.problems


def test_a_lesson_cell_runs_in_the_page(servers, open_page):
    watched = open_page(servers.url("book/lessons/donate_argnums.html"))
    page = watched.page
    bar = page.locator("nav.course-run")
    assert bar.locator("a.course-run-lab").get_attribute("href") == (
        f"{servers.jupyter}/lab/tree/lessons/donate_argnums.ipynb?token={servers.token}")
    download = bar.locator("a.course-run-ipynb")
    with page.expect_download() as info:
        download.click()
    saved = info.value.path()
    assert b'"nbformat": 4' in open(saved, "rb").read()

    bar.locator("button.course-run-here").click()
    status = bar.locator(".course-run-status")
    page.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    assert status.inner_text().startswith("Ready"), status.inner_text()
    cells = page.locator(".thebe-cell")
    assert cells.count() >= 10
    # run the lesson's first visible cell as written, then an edited one
    first = cells.first
    first.locator("button.thebe-run-button").click()
    code = ("import jax, jax.numpy as jnp\n"
            "x = jnp.arange(3.0)\n"
            "y = jax.jit(lambda a: a * 2, donate_argnums=(0,))(x)\n"
            "print('doubled', y.tolist(), 'donated', x.is_deleted())")
    second = cells.nth(1)
    second.locator(".CodeMirror").evaluate("(el, code) => el.CodeMirror.setValue(code)", code)
    second.locator("button.thebe-run-button").click()
    # thebe writes a cell's output where the page showed the built output
    cell = page.locator("article div.cell").filter(has=page.locator(".thebe-cell")).nth(1)
    output = cell.locator(".cell_output .jp-OutputArea-output")
    output.filter(has_text="doubled").first.wait_for(timeout=WAIT_MS)
    assert "doubled [0.0, 2.0, 4.0] donated True" in output.first.inner_text()
    screenshot(page, "lesson-running-in-page")
    assert not watched.problems, watched.problems


def test_lessons_offer_jupyterlab_and_download(servers, open_page):
    for lesson in LESSONS:
        page = open_page(servers.url(f"book/lessons/{lesson}.html")).page
        lab = page.locator("nav.course-run a.course-run-lab")
        assert lab.get_attribute("href").startswith(f"{servers.jupyter}/lab/tree/lessons/{lesson}.ipynb")
        assert (servers.workspace / "lessons" / f"{lesson}.ipynb").is_file()
        assert page.locator("nav.course-run a.course-run-ipynb").get_attribute("download") == f"{lesson}.ipynb"


def _run_here(page):
    """Press "Run the code on this page" and wait until its cells are live."""
    page.locator("nav.course-run button.course-run-here").click()
    page.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    status = page.locator("nav.course-run .course-run-status").inner_text()
    assert status.startswith("Ready"), status


def _run_cell(page, index, until, code=None):
    """Run the page's live cell ``index`` (with ``code`` typed in, if given) until its
    output matches the regex ``until``; returns that output's text."""
    cell = page.locator("article div.cell").filter(has=page.locator(".thebe-cell")).nth(index)
    if code is not None:
        cell.locator(".CodeMirror").evaluate("(el, code) => el.CodeMirror.setValue(code)", code)
    cell.locator("button.thebe-run-button").click()
    output = cell.locator(".cell_output .jp-OutputArea-output").filter(has_text=re.compile(until))
    output.first.wait_for(timeout=WAIT_MS)
    return cell.locator(".cell_output").inner_text()


LEAK = "print('leaked' if 'set_on_another_page' in dir() else 'fresh')"


def test_each_lesson_page_runs_on_a_kernel_of_its_own(servers, open_page):
    """A name set on one lesson page is unknown on another and after a reload, and the
    sharded lesson's first cell (jax_num_cpu_devices: before JAX starts) runs after another
    lesson ran JAX; either order."""
    first = open_page(servers.url("book/lessons/donate_argnums.html"))
    _run_here(first.page)
    _run_cell(first.page, 0, "^set", "import jax.numpy as jnp\nset_on_another_page = jnp.ones(2)\nprint('set')")

    sharded = open_page(servers.url("book/lessons/sharded_state.html"))
    _run_here(sharded.page)
    sharded.page.locator(".thebe-cell").first.locator("button.thebe-run-button").click()  # as written
    # The kernel runs cells in order: once the next one answers, the first one's output is in.
    out = _run_cell(sharded.page, 1, "fresh|leaked", LEAK + "\nprint('devices', len(jax.devices()))")
    assert "fresh" in out and "devices 8" in out, out
    first_cell = sharded.page.locator("article div.cell").filter(has=sharded.page.locator(".thebe-cell")).first
    assert "Error" not in first_cell.locator(".cell_output").inner_text()

    first.page.reload(wait_until="networkidle")  # a reload starts a new kernel too
    _run_here(first.page)
    assert "fresh" in _run_cell(first.page, 0, "fresh|leaked", LEAK)
    screenshot(sharded.page, "lesson-own-kernel")
    assert not first.problems and not sharded.problems, first.problems + sharded.problems


def test_pages_opened_without_the_printed_query_find_the_course(servers, open_page):
    """A page opened by its bare address (a bookmark, a link typed in) finds the JupyterLab
    and the learner this make serve chose (here not the default ports), and says the
    token is what is missing, not that JupyterLab is not running."""
    lesson = open_page(f"{servers.site}book/lessons/donate_argnums.html").page
    lesson.wait_for_function("(lab) => document.querySelector('nav.course-run a.course-run-lab')"
                             ".href.startsWith(lab + '/lab/tree/lessons/')", arg=servers.jupyter)
    lesson.locator("button.course-run-here").click()
    lesson.wait_for_function(
        "() => /^(Ready|Could not)/.test(document.querySelector('.course-run-status').textContent)",
        timeout=WAIT_MS)
    said = lesson.locator(".course-run-status").inner_text()
    assert servers.jupyter in said and "refused this page's token" in said, said

    exercise = open_page(f"{servers.site}book/exercises/update_with_donate.html").page
    exercise.locator(".grader-as strong").wait_for()
    assert exercise.locator(".grader-as strong").inner_text() == servers.learner
    assert exercise.locator("#grader-learner").count() == 0
    # its service's rule; without this run's key the page can neither submit nor list
    exercise.locator(".grader-rule").filter(has_text="Grading rule").wait_for()
    assert "default" not in exercise.locator(".grader-rule").inner_text()
    exercise.locator("#grader-status").filter(has_text="does not hold the key").wait_for()


def test_a_page_lets_a_leaving_page_shut_its_kernel_down(servers, open_page):
    """A page that goes sends a DELETE for its kernel and notes that in the browser's
    storage; a page of the same lesson started meanwhile (a reload, another tab) waits for
    that kernel to go instead of sending a DELETE of its own: two DELETEs of one session
    cross, and the one that loses gets a 404 without a CORS header, a console error (seen
    once in make test, on a loaded machine). Here the leaving page's DELETE is late: the
    test sends it once the new page has listed the kernels twice."""
    first = open_page(servers.url("book/lessons/donate_argnums.html"))
    _run_here(first.page)
    path = first.page.locator("button.course-run-here").get_attribute("data-kernel-path")
    api, auth = f"{servers.jupyter}/api/sessions", {"token": servers.token}
    (old,) = [s["id"] for s in requests.get(api, params=auth, timeout=30).json() if s["path"] == path]

    second = Watched(first.page.context.new_page())  # the same browser storage
    second.page.goto(servers.url("book/lessons/donate_argnums.html"), wait_until="networkidle")
    deletes, lists, late = [], [], []
    second.page.on("request", lambda r: (deletes if r.method == "DELETE" else lists).append(r.url)
                   if "/api/sessions" in r.url else None)

    def leaving_page_deletes():
        deadline = time.monotonic() + WAIT_MS / 1000
        while len(lists) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        late.append(requests.delete(f"{api}/{old}", params=auth, timeout=30).status_code)

    # what the first page's pagehide notes (course-run.js, noteLeaving) as it leaves
    second.page.evaluate("id => localStorage.setItem('course-run-leaving:' + id, String(Date.now()))", old)
    sender = threading.Thread(target=leaving_page_deletes)
    sender.start()
    try:
        _run_here(second.page)
    finally:
        sender.join()
    assert deletes == [] and late == [204] and len(lists) >= 3, (deletes, late, lists)
    assert "fresh" in _run_cell(second.page, 0, "fresh|leaked", LEAK)
    assert not second.problems, second.problems
