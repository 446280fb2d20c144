"""The class page's plots in Chromium at a desktop's 1280 px and a phone's 390 px:
no label cut off by its figure, no two labels over each other, text that still
reads on the phone, a ten-minute burst of submissions on an axis in minutes, and
the due date's label off the curve. Boxes are the SVG DOM's, as Chromium lays
the page out; screenshots in _build/screenshots/."""
from datetime import UTC, datetime

import pytest

from autograder.service.class_views import class_page, class_stats
from autograder.service.class_views.class_page import STATIC
from tests.browser.pages import screenshot
from tests.grading.helpers import ASSIGNMENT
from tests.service.test_class_page import DONATES, _graded, golden, store  # noqa: F401

START = datetime(2026, 12, 3, 14, 0, tzinfo=UTC).timestamp()
BURST = [START + 15 * i for i in range(41)]  # 41 submissions in ten minutes
DUE = datetime(2026, 12, 3, 14, 8, tzinfo=UTC)  # during the burst
SMALLEST_PX = 9.0  # the least height of a label's box on the phone

# every <svg> of the page: its box, its labels' boxes and text, the curve's and the due label's
BOXES = """() => [...document.querySelectorAll('figure.plot svg')].map(svg => {
  const box = r => { const b = r.getBoundingClientRect();
                     return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; };
  const part = id => { const el = svg.querySelector(`[id="${id}"]`); return el ? box(el) : null; };
  return {label: svg.getAttribute('aria-label'), svg: box(svg),
          texts: [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
                   .map(t => ({text: t.textContent, ...box(t)})),
          curve: part('timeline-curve'), due: part('timeline-due')};
})"""


def overlap(a, b, slack=0.5):
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > slack and
            min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack)


@pytest.fixture
def page_html(store):  # noqa: F811
    none = golden("no_donation/update_with_donate", DONATES)
    wrong = golden("delta_donated/update_with_donate", DONATES)
    for i, output in enumerate([none] * 5 + [wrong] * 3 + [None] * 6):
        _graded(store, f"learner{i:02d}", output)
    data = class_stats.class_data(store, "best")
    data["exercises"][ASSIGNMENT].update(times=BURST, due=DUE)
    return class_page.render(data)


@pytest.mark.parametrize("width", [1280, 390])
def test_plots_read_at_desktop_and_phone_widths(browser, page_html, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_content(page_html)
    page.add_style_tag(path=str(STATIC / "class-page.css"))
    plots = page.evaluate(BOXES)
    screenshot(page, f"class-page-plots-{width}")
    context.close()

    assert len(plots) == 3
    for plot in plots:
        where, texts = plot["label"][:40], plot["texts"]
        for t in texts:  # inside its figure: nothing cut off
            assert (t["left"] >= plot["svg"]["left"] - 1 and t["right"] <= plot["svg"]["right"] + 1
                    and t["top"] >= plot["svg"]["top"] - 1
                    and t["bottom"] <= plot["svg"]["bottom"] + 1), (where, t, plot["svg"])
            assert t["bottom"] - t["top"] >= SMALLEST_PX, (where, t)
        clashes = [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:]
                   if overlap(a, b)]
        assert not clashes, (where, clashes)
        assert plot["svg"]["right"] <= width  # no plot wider than the window

    timeline = plots[2]
    axis = [t["text"] for t in timeline["texts"]]
    assert "minutes since the first submission or the due date" in axis, axis
    ticks = [float(t["text"]) for t in timeline["texts"] if t["text"].replace(".", "").isdigit()
             and t["top"] >= timeline["curve"]["bottom"] - 1]  # the x axis's, below the curve
    assert ticks and max(ticks) <= 12, ticks  # minutes of a ten-minute burst, not hours or seconds
    assert timeline["due"] and timeline["curve"] and not overlap(timeline["due"], timeline["curve"])


@pytest.fixture
def whole_page(store):  # noqa: F811
    """A class page as an instructor reads it: long feedback and names, a notebook that
    could not be graded, every exercise of the course (most with no submission yet)."""
    from autograder.exercises import names
    from autograder.service.class_views.roster import Roster
    from tests.service.test_class_page import NOT_GRADED, _not_graded
    none = golden("no_donation/update_with_donate", DONATES)
    for i, output in enumerate([none] * 3 + [None] * 2):
        _graded(store, f"learner_with_a_rather_long_name_{i:02d}", output)
    _graded(store, "eve", "values differ: largest difference is 0.25 at index 3 of (1024,) "
            + "x" * 300)
    for i, (status, output) in enumerate(NOT_GRADED.values()):
        _not_graded(store, f"stuck{i}", status, output)
    course = Roster(learners={"never_came": False}, exercises=tuple(names()),
                    points=dict.fromkeys(names(), 10.0))
    return class_page.render(dict(class_stats.class_data(store, "best", roster=course),
                                  out_of_date=["update_with_donate: hidden tests changed since "
                                               "release: run make release"]))


@pytest.mark.parametrize("width", [1280, 390])
def test_the_whole_page_fits_the_window(browser, whole_page, width):
    """No part of the class page makes it wider than the window: wide tables scroll in
    their own box, long feedback wraps."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_content(whole_page)
    page.add_style_tag(path=str(STATIC / "class-page.css"))
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    stuck = page.locator("p.not-graded").first.inner_text()
    screenshot(page, f"class-page-{width}")
    context.close()
    assert wide <= width, f"the page is {wide} px wide in a {width} px window"
    assert stuck.startswith("Not graded: ")
