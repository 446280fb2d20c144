"""The lesson column at tablet widths in Chromium (book/_static/page-layout.css): no page
scrolls sideways, and the layout rules of ``tests/browser/layout.py`` hold (code fits
the column at 1024 px, tables are framed to their rows, identifiers are not broken at
768 px). At a laptop's and a phone's width ``test_pages`` checks the same rules on the
views it opens; here, the column's own width on a laptop."""

from __future__ import annotations

import pytest

from tests.browser.layout import layout_problems, sideways_overflow
from tests.browser.pages import screenshot

from .test_pages import PAGES as ALL_PAGES

PAGES = [name for name in ALL_PAGES if name.startswith("book/")]  # the search page has no article


@pytest.mark.parametrize("width", [768, 1024])
def test_pages_keep_the_layout_rules_on_a_tablet(servers, open_page, width):
    failures = []
    for page_name in PAGES:
        watched = open_page(servers.url(f"{page_name}.html"), width=width)
        overflow = sideways_overflow(watched.page, width)
        if overflow > 1:
            failures.append(f"{page_name} at {width}px scrolls sideways by {overflow}px")
        failures += layout_problems(watched.page, page_name, width)
        failures += [f"{page_name}: {p}" for p in watched.problems]
    assert not failures, "\n".join(failures)


def test_the_lesson_column_is_wide_on_a_laptop(servers, open_page):
    page = open_page(servers.url("book/lessons/state_tree.html"), width=1280).page
    column = page.evaluate("document.querySelector('.bd-article').getBoundingClientRect().width")
    assert column >= 800, f"the lesson column is {column:.0f}px wide at 1280px"
    assert page.locator(".bd-sidebar-secondary").is_visible(), "the page's contents list is gone"
    screenshot(page, "layout-state_tree-1280")
