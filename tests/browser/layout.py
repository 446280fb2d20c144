"""The lesson column's layout rules (book/_static/page-layout.css), read from a page
already open at one width: each rule applies at the widths where a reader meets it.

* code cells fit the lesson column and printed outputs wrap, on a laptop or a wide
  tablet (``CODE_FITS_FROM`` px and wider), on the lesson pages;
* a table's frame is as wide as its rows, at every width;
* on a phone (narrower than ``PHONE_BELOW`` px) an identifier in a table or a sentence
  is never broken in the middle;
* a sentence's check mark (book/_ext/rules_site.py) is one small raised mark, at every
  width: no wider than ``MARK_PX`` and no taller than the line, its rule's id not printed.

:func:`layout_problems` is called by ``test_pages`` on the views it opens anyway (1280 px
and 390 px) and by ``test_layout`` at the tablet widths, so each page is loaded once per
width for all of them.
"""

from __future__ import annotations

CODE_FITS_FROM = 1024  # px: narrower, the lesson column leaves code cells to scroll
PHONE_BELOW = 800  # px: as the browser tests' contexts (is_mobile below it)

# Every <pre> of the article that scrolls sideways: [in a code cell or an output, its first
# line that is too wide]. A code cell folded by its hide-input tag (myst-nb's
# <details class="hide ...">) is opened first: folded, its <pre> measures as scrolling, and
# a reader who opens it must find the code fitting too.
SCROLLING_PRES = """() => {
    document.querySelectorAll('.bd-article details.hide').forEach(folded => { folded.open = true; });
    return [...document.querySelectorAll('.bd-article pre')]
        .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
        .map(pre => [pre.closest('.cell_output') ? 'output' : 'code',
                     pre.innerText.split('\\n').sort((a, b) => b.length - a.length)[0]]);
}"""

# Tables whose frame is wider than their rows: [first header cell, frame px, rows px].
FRAMES_WIDER_THAN_ROWS = """() => [...document.querySelectorAll('.bd-article table')]
    .map(t => [t.querySelector('th, td').innerText.trim(), t.getBoundingClientRect().width,
               (t.querySelector('tbody') || t).getBoundingClientRect().width])
    .filter(([, frame, rows]) => frame - rows > 2)"""

# Inline code that is one identifier (letters, digits, underscores) and spans two lines.
BROKEN_IDENTIFIERS = """() => [...document.querySelectorAll('.bd-article code.literal')]
    .filter(c => !c.closest('pre') && /^\\w+$/.test(c.innerText.trim()) && c.getClientRects().length > 1)
    .map(c => c.innerText.trim())"""


MARK_PX = 20  # px: a check mark in a sentence, at most (a printed rule id took 150 and more)
# Check marks that break the reading: [rule id, width px, height px, line height px].
LARGE_MARKS = """(most) => [...document.querySelectorAll('.bd-article a.course-rule-link')]
    .map(a => [a.querySelector('.course-rule-id').textContent, a.getBoundingClientRect().width,
               a.getBoundingClientRect().height, parseFloat(getComputedStyle(a.closest('p, li') || a).lineHeight)])
    .filter(([, w, h, line]) => w > most || h > line)"""


def sideways_overflow(page, width: int) -> int:
    """How many px ``page`` scrolls sideways in a viewport ``width`` px wide (0 or less: none).
    Against the width asked for: a phone browser widens its layout viewport
    (window.innerWidth) to fit what overflows, so that never shows a difference."""
    return page.evaluate("document.scrollingElement.scrollWidth") - width


def layout_problems(page, page_name: str, width: int) -> list[str]:
    """Each broken layout rule on ``page`` (a Playwright page showing ``page_name``, e.g.
    ``"book/lessons/state_tree"``, in a viewport ``width`` px wide), one line each."""
    found = []
    if page_name.startswith("book/lessons/") and width >= CODE_FITS_FROM:
        found += [f"{page_name} at {width}px: a {kind} block scrolls sideways ({line!r})"
                  for kind, line in page.evaluate(SCROLLING_PRES)]
    found += [f"{page_name} at {width}px: the table under {head!r} is framed {frame:.0f}px wide "
              f"around {rows:.0f}px of rows" for head, frame, rows in page.evaluate(FRAMES_WIDER_THAN_ROWS)]
    found += [f"{page_name} at {width}px: the check mark of {rule} is {w:.0f}x{h:.0f}px (line {line:.0f}px)"
              for rule, w, h, line in page.evaluate(LARGE_MARKS, MARK_PX)]
    if width < PHONE_BELOW:
        found += [f"{page_name} at {width}px: `{name}` is broken across two lines"
                  for name in page.evaluate(BROKEN_IDENTIFIERS)]
    return found
