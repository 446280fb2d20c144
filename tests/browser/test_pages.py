"""Every page in Chromium at a laptop and a phone width, light and dark: it loads
with no console error, no failed request and nothing from the internet, does not
scroll sideways, and axe-core finds no serious or critical accessibility problem.
Each view is saved as a screenshot under _build/screenshots/."""

from __future__ import annotations

import pytest

from tests.book.sitebuild import LESSONS

from .conftest import axe_violations, screenshot

PAGES = ["book/intro", *(f"book/lessons/{name}" for name in LESSONS), "book/exercises/index",
         "book/exercises/update_with_donate", "book/exercises/donation_report",
         "book/exercises/fix_training_loop", "book/exercises/silent_donation", "search"]
VIEWS = [("laptop-light", 1280, False), ("phone-dark", 390, True),
         ("laptop-dark", 1280, True), ("phone-light", 390, False)]


@pytest.mark.parametrize("page_name", PAGES)
def test_page_in_the_browser(servers, open_page, page_name):
    failures = []
    for view, width, dark in VIEWS:
        watched = open_page(servers.url(f"{page_name}.html"), width=width, dark=dark)
        page = watched.page
        screenshot(page, f"{page_name.replace('/', '-')}-{view}")
        theme = page.evaluate("document.documentElement.dataset.theme")
        if theme != ("dark" if dark else "light"):
            failures.append(f"{view}: the page is in {theme} mode")
        if not page.locator("h1:visible").count():
            failures.append(f"{view}: no visible heading")
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        if overflow > 1:
            failures.append(f"{view}: the page scrolls sideways by {overflow}px")
        if view in ("laptop-light", "phone-dark"):  # axe once per width and per colour scheme
            for v in axe_violations(page):
                failures.append(f"{view}: axe {v['impact']} {v['id']} ({v['help']}): {v['nodes']}")
        failures += [f"{view}: {p}" for p in watched.problems]
    assert not failures, "\n".join(failures)


def test_home_page_redirects_to_the_course(servers, open_page):
    watched = open_page(servers.site)
    assert watched.page.url.endswith("book/intro.html"), watched.page.url
    assert "Buffer donation in JAX" in watched.page.inner_text("article h1")
    assert not watched.problems, watched.problems
