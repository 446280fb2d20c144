"""The lesson column at laptop, tablet and phone widths in Chromium
(book/_static/page-layout.css): code cells fit the column on a laptop, printed
outputs wrap there instead of hiding past the right edge, no page scrolls sideways
at tablet widths, a table's frame is as wide as its rows, and on a phone an
identifier in a table or a sentence is never broken in the middle."""

from __future__ import annotations

import pytest

from tests.book.sitebuild import LESSONS

from tests.browser.pages import screenshot
from .test_pages import PAGES as ALL_PAGES

LESSON_PAGES = [f"book/lessons/{name}" for name in LESSONS]
PAGES = [name for name in ALL_PAGES if name.startswith("book/")]  # the search page has no article

# Every <pre> of the article that scrolls sideways: [in a code cell or an output, its first
# line that is too wide].
SCROLLING_PRES = """() => [...document.querySelectorAll('.bd-article pre')]
    .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => [pre.closest('.cell_output') ? 'output' : 'code',
                 pre.innerText.split('\\n').sort((a, b) => b.length - a.length)[0]])"""

# Tables whose frame is wider than their rows: [first header cell, frame px, rows px].
FRAMES_WIDER_THAN_ROWS = """() => [...document.querySelectorAll('.bd-article table')]
    .map(t => [t.querySelector('th, td').innerText.trim(), t.getBoundingClientRect().width,
               (t.querySelector('tbody') || t).getBoundingClientRect().width])
    .filter(([, frame, rows]) => frame - rows > 2)"""

# Inline code that is one identifier (letters, digits, underscores) and spans two lines.
BROKEN_IDENTIFIERS = """() => [...document.querySelectorAll('.bd-article code.literal')]
    .filter(c => !c.closest('pre') && /^\\w+$/.test(c.innerText.trim()) && c.getClientRects().length > 1)
    .map(c => c.innerText.trim())"""


@pytest.mark.parametrize("width", [1280, 1024])
def test_code_fits_the_lesson_column_and_outputs_wrap(servers, open_page, width):
    failures = []
    for page_name in LESSON_PAGES:
        watched = open_page(servers.url(f"{page_name}.html"), width=width)
        for kind, line in watched.page.evaluate(SCROLLING_PRES):
            failures.append(f"{page_name} at {width}px: a {kind} block scrolls sideways ({line!r})")
        failures += [f"{page_name}: {p}" for p in watched.problems]
    assert not failures, "\n".join(failures)


def test_the_lesson_column_is_wide_on_a_laptop(servers, open_page):
    page = open_page(servers.url("book/lessons/state_tree.html"), width=1280).page
    column = page.evaluate("document.querySelector('.bd-article').getBoundingClientRect().width")
    assert column >= 800, f"the lesson column is {column:.0f}px wide at 1280px"
    assert page.locator(".bd-sidebar-secondary").is_visible(), "the page's contents list is gone"
    screenshot(page, "layout-state_tree-1280")


@pytest.mark.parametrize("width", [768, 1024])
def test_no_page_scrolls_sideways_on_a_tablet(servers, open_page, width):
    failures = []
    for page_name in PAGES:
        page = open_page(servers.url(f"{page_name}.html"), width=width).page
        overflow = page.evaluate("document.scrollingElement.scrollWidth") - width
        if overflow > 1:
            failures.append(f"{page_name} at {width}px scrolls sideways by {overflow}px")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("width", [1280, 390])
def test_tables_are_framed_to_their_rows(servers, open_page, width):
    failures = []
    for page_name in PAGES:
        page = open_page(servers.url(f"{page_name}.html"), width=width).page
        for head, frame, rows in page.evaluate(FRAMES_WIDER_THAN_ROWS):
            failures.append(f"{page_name} at {width}px: the table under {head!r} is framed "
                            f"{frame:.0f}px wide around {rows:.0f}px of rows")
    assert not failures, "\n".join(failures)


def test_identifiers_are_not_broken_on_a_phone(servers, open_page):
    failures = []
    for page_name in PAGES:
        page = open_page(servers.url(f"{page_name}.html"), width=390).page
        failures += [f"{page_name}: `{name}` is broken across two lines"
                     for name in page.evaluate(BROKEN_IDENTIFIERS)]
    assert not failures, "\n".join(failures)
