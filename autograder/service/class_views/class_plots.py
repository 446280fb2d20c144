"""The class page's plots, drawn at request time with matplotlib as inline SVG
(no JavaScript, nothing fetched). Each bar carries a hatch pattern and a text
label, so no plot is read by colour alone; text stays text in the SVG
(``svg.fonttype: none``), so screen readers, search and the tests can read it.

Every function returns one ``<svg>`` element (str) with ``role="img"`` and an
``aria-label`` that says what it shows.
"""
import functools
import io
import re
from html import escape

import matplotlib

matplotlib.use("Agg")  # no display on a server
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "class-page", "font.size": 11,
         "axes.spines.top": False, "axes.spines.right": False}
BAR, EDGE, DUE = "#4b7bbf", "#1a2b44", "#b3261e"  # with hatches and labels; colour only repeats them
# 5 in (480 CSS px) at its own size on a wide screen; shrunk to a phone's 390 px less
# the page's margins (class-page.css), 11 pt text still reads at about 11 px
WIDTH_IN = 5.0
NAME_CHARS = 60  # a check's name on its own line above its bar, at 11 pt in 5 in
CACHED = 64  # plots kept: drawing one takes 0.1-0.3 s, the same inputs give the same SVG
# the timeline's units (name, seconds, the most of them it spans before the next unit)
UNITS = (("seconds", 1.0, 180), ("minutes", 60.0, 180), ("hours", 3600.0, 72),
         ("days", 86400.0, None))


def _svg(fig, label):
    with plt.rc_context(STYLE):
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    text = text[text.index("<svg"):]  # drop the XML declaration and doctype: inline in HTML
    return text.replace("<svg", f'<svg role="img" aria-label="{escape(label)}"', 1)


def _figure(height_in, left_in=0.2, top_in=0.1):
    # fixed margins, in inches, with room for the labels these plots draw (a "tight" or
    # constrained layout would draw every figure twice or three times)
    with plt.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in))
    fig.subplots_adjust(left=left_in / WIDTH_IN, right=1 - 0.25 / WIDTH_IN,
                        top=1 - top_in / height_in, bottom=0.62 / height_in)
    return fig


def pass_rates(checks):
    """Horizontal bars: each check's pass rate over latest submissions (``checks``:
    dicts with ``name``, ``passed``, ``learners``, ``pass_rate`` in [0, 1])."""
    return _pass_rates(tuple((c["name"], c["passed"], c["learners"], c["pass_rate"]) for c in checks))


@functools.lru_cache(CACHED)
def _pass_rates(rows):
    checks = [dict(zip(("name", "passed", "learners", "pass_rate"), r)) for r in rows]
    with plt.rc_context(STYLE):
        fig = _figure(0.62 * len(checks) + 0.7)
        ax = fig.subplots()
        # each check: its name on a line of its own, its bar below (long names need no margin)
        at = range(len(checks) - 1, -1, -1)
        rates = [100 * c["pass_rate"] for c in checks]
        ax.barh(list(at), rates, height=0.42, color=BAR, edgecolor=EDGE, hatch="//")
        for y, c, rate in zip(at, checks, rates):
            ax.text(0, y + 0.3, _short(c["name"]), va="bottom", ha="left")
            count = f"{c['passed']} / {c['learners']} ({c['pass_rate']:.0%})"
            inside = rate > 70  # a long bar carries its count inside, on a white patch
            ax.text(rate - 1.5 if inside else rate + 1.5, y, count, va="center",
                    ha="right" if inside else "left",
                    bbox=dict(facecolor="white", edgecolor="none", pad=1) if inside else None)
        ax.set_ylim(-0.5, len(checks) - 0.05)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_xlim(0, 100)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel("learners whose latest submission passed (%)")
    return _svg(fig, "pass rate of each check: " + "; ".join(
        f"{c['name']}: {c['passed']} of {c['learners']}" for c in checks))


def distribution(scores, max_score):
    """A histogram of recorded scores (floats, 0 to ``max_score``), one bar per point."""
    return _distribution(tuple(sorted(scores)), max_score)


@functools.lru_cache(CACHED)
def _distribution(scores, max_score):
    top = int(max_score or max(scores, default=0))
    counts = [sum(1 for s in scores if int(s) == point or (point == top and s > top))
              for point in range(top + 1)]
    with plt.rc_context(STYLE):
        fig = _figure(2.6, left_in=0.75, top_in=0.15)
        ax = fig.subplots()
        bars = ax.bar(range(top + 1), counts, color=BAR, edgecolor=EDGE, hatch="..")
        ax.bar_label(bars, [str(c) if c else "" for c in counts], padding=2)
        ax.set_xticks(range(top + 1))
        ax.set_ylim(0, max(counts, default=0) * 1.18 + 1)  # room for the count above the tallest
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(f"recorded score (points, of {top})")
        ax.set_ylabel("learners")
    return _svg(fig, "recorded scores: " + ", ".join(
        f"{c} with {p}" for p, c in enumerate(counts) if c))


def timeline(times, due):
    """Cumulative submissions over time (``times``: epoch s, sorted), the due date
    (an aware datetime or None) as a dashed line labelled "due"."""
    return _timeline(tuple(times), due)


@functools.lru_cache(CACHED)
def _timeline(times, due):
    marks = [*times, *([due.timestamp()] if due else [])]
    start = min(marks, default=0.0)
    unit, size = _unit(max(marks, default=0.0) - start)
    with plt.rc_context(STYLE):
        fig = _figure(2.8, left_in=0.75, top_in=0.35 if due else 0.15)  # the due label above
        ax = fig.subplots()
        ax.step([(t - start) / size for t in times], range(1, len(times) + 1), where="post",
                color=EDGE, linewidth=2, gid="timeline-curve")
        ax.set_ylim(0, max(len(times), 1) * 1.05)
        ax.yaxis.get_major_locator().set_params(integer=True)
        if due:
            at = (due.timestamp() - start) / size
            ax.axvline(at, color=DUE, linestyle="--", linewidth=2)
            # above the plotting area, where no curve is; towards the middle of the figure
            right = at > (ax.get_xlim()[0] + ax.get_xlim()[1]) / 2
            ax.text(at, 1.02, f"due {due:%Y-%m-%d %H:%M} UTC", color=DUE, va="bottom",
                    ha="right" if right else "left", transform=ax.get_xaxis_transform(),
                    gid="timeline-due")
        ax.set_xlabel(f"{unit} since the first submission" + (" or the due date" if due else ""))
        ax.set_ylabel("submissions so far")
    return _svg(fig, f"{len(times)} submissions over time" +
                (f", due {due:%Y-%m-%d %H:%M} UTC" if due else ""))


def _unit(span):
    """``(name, seconds)``: the unit a window of ``span`` seconds reads in (a ten-minute
    burst in minutes, a week in days)."""
    for name, size, most in UNITS:
        if most is None or span <= most * size:
            return name, size


def _short(name, limit=NAME_CHARS):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= limit else name[:limit - 1] + "\u2026"
