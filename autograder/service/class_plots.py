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

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "class-page", "font.size": 10,
         "axes.spines.top": False, "axes.spines.right": False}
BAR, EDGE = "#4b7bbf", "#1a2b44"  # with hatches and labels; colour only repeats them
WIDTH_IN = 7.0
HOURS = 3600.0
CACHED = 64  # plots kept: drawing one takes 0.1-0.3 s, the same inputs give the same SVG


def _svg(fig, label):
    with plt.rc_context(STYLE):
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    text = text[text.index("<svg"):]  # drop the XML declaration and doctype: inline in HTML
    return text.replace("<svg", f'<svg role="img" aria-label="{escape(label)}"', 1)


def _figure(height_in, left=0.12, bottom_in=0.55):
    # fixed margins: a "tight" bounding box would draw every figure twice
    with plt.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in))
    fig.subplots_adjust(left=left, right=0.97, top=1 - 0.15 / height_in, bottom=bottom_in / height_in)
    return fig


def pass_rates(checks):
    """Horizontal bars: each check's pass rate over latest submissions (``checks``:
    dicts with ``name``, ``passed``, ``learners``, ``pass_rate`` in [0, 1])."""
    return _pass_rates(tuple((c["name"], c["passed"], c["learners"], c["pass_rate"]) for c in checks))


@functools.lru_cache(CACHED)
def _pass_rates(rows):
    checks = [dict(zip(("name", "passed", "learners", "pass_rate"), r)) for r in rows]
    fig = _figure(0.3 * len(checks) + 0.8, left=0.46)
    ax = fig.subplots()
    names = [c["name"] for c in checks][::-1]
    rates = [100 * c["pass_rate"] for c in checks][::-1]
    bars = ax.barh(range(len(checks)), rates, color=BAR, edgecolor=EDGE, hatch="//")
    ax.bar_label(bars, [f"{c['passed']} / {c['learners']} ({c['pass_rate']:.0%})"
                        for c in checks][::-1], padding=3)
    ax.set_yticks(range(len(checks)), [_short(n) for n in names], fontsize=9)
    ax.set_xlim(0, 125)
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
    fig = _figure(2.4)
    ax = fig.subplots()
    bars = ax.bar(range(top + 1), counts, color=BAR, edgecolor=EDGE, hatch="..")
    ax.bar_label(bars, [str(c) if c else "" for c in counts], padding=2)
    ax.set_xticks(range(top + 1))
    ax.set_ylim(0, max(counts, default=0) * 1.18 + 1)  # room for the count above the tallest
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
    fig = _figure(2.4)
    ax = fig.subplots()
    start = min([*times, *([due.timestamp()] if due else [])], default=0.0)
    hours = [(t - start) / HOURS for t in times]
    ax.step(hours, range(1, len(times) + 1), where="post", color=EDGE, linewidth=2)
    if due:
        at = (due.timestamp() - start) / HOURS
        ax.axvline(at, color="#b3261e", linestyle="--", linewidth=2)
        ax.annotate(f"due {due:%Y-%m-%d %H:%M} UTC", (at, len(times) or 1), ha="right",
                    xytext=(-4, 0), textcoords="offset points", va="top")
    ax.set_xlabel("hours since the first submission" + (" or the due date" if due else ""))
    ax.set_ylabel("submissions so far")
    return _svg(fig, f"{len(times)} submissions over time" +
                (f", due {due:%Y-%m-%d %H:%M} UTC" if due else ""))


def _short(name, limit=40):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= limit else name[:limit - 1] + "\u2026"
