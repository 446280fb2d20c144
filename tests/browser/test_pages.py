"""Every page in Chromium at a laptop and a phone width, light and dark: it loads
with no console error, no failed request and nothing from the internet, does not
scroll sideways, keeps the lesson column's layout rules (tests/browser/layout.py), and
axe-core finds no serious or critical accessibility problem.
A view that fails is saved as a screenshot under _build/screenshots/ (every view with
COURSE_SCREENSHOTS=all)."""

from __future__ import annotations

import pytest

from autograder import exercises
from tests.book.sitebuild import LESSONS
from tests.browser.layout import layout_problems, sideways_overflow
from tests.browser.pages import axe_violations, screenshot

PAGES = ["book/intro", *(f"book/lessons/{name}" for name in LESSONS), "book/exercises/index",
         *(f"book/exercises/{name}" for name in exercises.names()), "search"]
VIEWS = [("laptop-light", 1280, False), ("phone-dark", 390, True),
         ("laptop-dark", 1280, True), ("phone-light", 390, False)]

# Pixels between the last line of the title's text and the bottom of the title
# (a permalink wrapped onto a line of its own left a blank line there).
TITLE_GAP = """() => {
    const h1 = document.querySelector('article h1');
    if (!h1) return 0;  // (the search page's title is not in an article)
    const range = document.createRange();
    let bottom = 0;
    for (const node of h1.childNodes) {
        if (node.nodeType === 1 && node.matches('a.headerlink')) continue;
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) if (r.width > 0) bottom = Math.max(bottom, r.bottom);
    }
    return h1.getBoundingClientRect().bottom - bottom;
}"""


@pytest.mark.parametrize("page_name", PAGES)
def test_page_in_the_browser(servers, open_page, page_name):
    failures = []
    for view, width, dark in VIEWS:
        watched = open_page(servers.url(f"{page_name}.html"), width=width, dark=dark)
        page = watched.page
        before = len(failures)
        theme = page.evaluate("document.documentElement.dataset.theme")
        if theme != ("dark" if dark else "light"):
            failures.append(f"{view}: the page is in {theme} mode")
        if not page.locator("h1:visible").count():
            failures.append(f"{view}: no visible heading")
        overflow = sideways_overflow(page, width)
        if overflow > 1:
            failures.append(f"{view}: the page scrolls sideways by {overflow}px")
        gap = page.evaluate(TITLE_GAP)
        if gap > 8:
            failures.append(f"{view}: {gap:.0f}px of blank space under the page title")
        if view in ("laptop-light", "phone-light"):  # layout once per width (tests/browser/layout.py)
            failures += [f"{view}: {p}" for p in layout_problems(page, page_name, width)]
        if view in ("laptop-light", "phone-dark"):  # axe once per width and per colour scheme
            for v in axe_violations(page):
                failures.append(f"{view}: axe {v['impact']} {v['id']} ({v['help']}): {v['nodes']}")
        failures += [f"{view}: {p}" for p in watched.problems]
        failed = len(failures) > before
        shot = screenshot(page, f"{page_name.replace('/', '-')}-{view}", failed=failed)
        if failed:
            failures.append(f"{view}: as it looked: {shot}")
    assert not failures, "\n".join(failures)


def test_home_page_redirects_to_the_course(servers, open_page):
    watched = open_page(servers.site)
    assert watched.page.url.endswith("book/intro.html"), watched.page.url
    assert "Buffer donation in JAX" in watched.page.inner_text("article h1")
    assert not watched.problems, watched.problems
