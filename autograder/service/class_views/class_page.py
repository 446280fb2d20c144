"""The instructors' class page as HTML, from :func:`autograder.service.class_views.class_stats.class_data`
(nothing here reads the store). Every value from a learner (names, feedback
quoting their code's results) is escaped.

The page is static HTML with inline SVG plots; sorting and filtering the
learners' tables is list.js (npm, ``package.json``), served by this service
with ``class-page.js`` and ``class-page.css`` (:data:`ASSETS`); it works
without them as plain tables.
"""
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from autograder.defaults import CHECKOUT as REPO, points_text
from autograder.service.gradebook.lateness import duration_words

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {  # name under <prefix>static/ -> (file, content type)
    "list.min.js": (REPO / "node_modules" / "list.js" / "dist" / "list.min.js", "text/javascript"),
    "class-page.js": (STATIC / "class-page.js", "text/javascript"),
    "class-page.css": (STATIC / "class-page.css", "text/css"),
}
SHOWN_NAMES = 12  # learners named in a group before the rest fold away
COLUMNS = (("learner", "learner"), ("recorded", "recorded"), ("best", "best"),
           ("latest", "latest"), ("submissions", "submissions"), ("late", "late"),
           ("activity", "last activity (UTC)"))


def render(data, site="../course/book/intro.html"):
    """The whole page (str) for ``data`` (:func:`class_data`'s dict, with ``out_of_date``:
    sentences on grades out of date, shown first)."""
    exercises = data["exercises"]
    toc = "".join(f'<li><a href="#{_id(n)}">{escape(n)}</a></li>' for n in exercises)
    body = "".join(_exercise(name, ex) for name, ex in exercises.items())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>The class</title>"
        '<link rel="stylesheet" href="static/class-page.css">'
        '<script src="static/class-page.js"></script></head><body>'
        f'<header><nav aria-label="course"><a href="{escape(site)}">Course</a> '
        '<a href="./">Your grades</a> <a href="api/class.csv" download>Class CSV</a></nav>'
        "</header><main><h1>The class</h1>" + _out_of_date(data.get("out_of_date", ())) +
        f'<nav aria-label="exercises"><ul class="toc">{toc}'
        '<li><a href="#progress">Progress across the course</a></li></ul></nav>'
        f"{body}{_progress(data['progress'], list(exercises), data.get('names') or {})}</main>"
        '<script src="static/list.min.js"></script></body></html>')


def refusal(message):
    """The page a browser gets instead of the class page (a learner, or nobody signed in):
    ``message`` (the API's words for the 403), and the way to one's own grades."""
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>Instructors only</title><link rel="stylesheet" href="static/class-page.css">'
            '</head><body><main><h1>Instructors only</h1>'
            f"<p>{escape(message[:1].upper() + message[1:])}.</p>"
            '<p><a href="./">Your grades</a></p></main></body></html>')


def _out_of_date(sentences):
    """Where recorded grades are out of date (:mod:`.out_of_date`), above everything."""
    if not sentences:
        return ""
    items = "".join(f"<li>{escape(s)}</li>" for s in sentences)
    return f'<section class="out-of-date" role="status"><h2>Out of date</h2><ul>{items}</ul></section>'


def _exercise(name, ex):
    # Imported here: matplotlib takes about half a second of every API process's start,
    # and most processes never draw the class page.
    from autograder.service.class_views import class_plots

    learners = ex["learners"]
    who = population(learners)
    due = f", due {ex['due']:%Y-%m-%d %H:%M} UTC" if ex["due"] else ""
    head = (
        f'<section class="exercise" id="{_id(name)}" aria-labelledby="{_id(name)}-h">'
        f'<h2 id="{_id(name)}-h">{escape(name)}</h2>'
        f"<p>{who['learners']} learners{_withdrawn(who)}, {who['submitted']} submitted, "
        f"{who['recorded']} graded{_unrun(who)}; out of {_num(ex['max_score'])} "
        f"points; recorded grade: {escape(ex['recorded_rule'])}{escape(due)}.</p>")
    table = f"<h3>Learners</h3>{_table(name, learners, ex['max_score'])}</section>"
    if not ex["times"]:  # nothing to plot: no axes around nothing
        return head + '<p class="empty">No submissions yet.</p>' + table
    return (
        head + "<h3>Where the class is stuck</h3>"
        + _figure(_over_checked(who), class_plots.pass_rates(ex["checks"]) if ex["checks"] else "")
        + _not_graded(ex.get("not_graded", ())) + _groups(name, ex["checks"])
        + (_figure(_over_recorded(who), class_plots.distribution(ex["scores"], ex["max_score"]))
           if ex["scores"] else "")
        + _figure(f"Submissions over time: all {len(ex['times'])} submissions of the "
                  f"{who['submitted']} learners who submitted (a regrade is not a submission)",
                  class_plots.timeline(ex["times"], ex["due"]))
        + table)


def population(learners):
    """Who each of an exercise's numbers is over (``learners``: :func:`class_data`'s rows):
    ``{"learners", "withdrawn", "submitted", "recorded"`` (with a recorded grade),
    ``"checked"`` (latest graded submission's checks ran), ``"not_graded"`` (latest could
    not be graded), ``"no_result"`` (no graded submission)``}``, each a count."""
    return {"learners": len(learners),
            "withdrawn": sum(1 for r in learners if r.get("withdrawn")),
            "submitted": sum(1 for r in learners if r["submissions"]),
            "recorded": sum(1 for r in learners if r["recorded"] is not None),
            "checked": sum(1 for r in learners if r["latest"] is not None and not r["not_graded"]),
            "not_graded": sum(1 for r in learners if r["latest"] is not None and r["not_graded"]),
            "no_result": sum(1 for r in learners if r["latest"] is None)}


def _withdrawn(who):
    return (f" ({who['withdrawn']} withdrawn, counted in every number here)"
            if who["withdrawn"] else "")


def _unrun(who):
    """The graded learners whose latest notebook's checks did not run (they have a grade,
    0 points when none ran before): said beside "graded", not hidden in it."""
    return (f" ({who['not_graded']} of them: latest notebook could not be graded)"
            if who["not_graded"] else "")


def _over_checked(who):
    left = [f"{who['not_graded']} whose latest notebook could not be graded"] * bool(who["not_graded"]) \
        + [f"{who['no_result']} with no graded submission"] * bool(who["no_result"])
    return (f"Pass rate of each check over the latest graded submission of each of "
            f"{who['checked']} learners" + (f" (not counted: {' and '.join(left)})" if left else ""))


def _over_recorded(who):
    left = who["learners"] - who["recorded"]
    return (f"Recorded scores (late penalties deducted) of the {who['recorded']} learners with "
            "a recorded grade" + (f"; the {left} without one are not plotted (the class CSV "
                                  "lists them with a score of 0)" if left else ""))


def _figure(caption, svg):
    if not svg:
        return ""
    return f'<figure class="plot">{svg}<figcaption>{escape(caption)}</figcaption></figure>'


def _groups(exercise, checks):
    """Per check, its failing observations, the most common first."""
    parts = []
    for check in checks:
        if not check["groups"]:
            continue
        items = "".join(
            f'<li class="group"><span class="count">{g["count"]} \u00d7</span> '
            f'<code class="observation">{_masked(g["observation"])}</code> {_names(g["learners"])}</li>'
            for g in check["groups"])
        parts.append(f'<h4 class="check">{escape(check["name"])}: '
                     f'{check["learners"] - check["passed"]} failing</h4><ul class="groups">{items}</ul>')
    legend = ('<p class="legend"><var class="masked">n</var> stands for a number that differs '
              "from learner to learner (a value, an index, a count of elements).</p>"
              if any("#" in g["observation"] for c in checks for g in c["groups"]) else "")
    return f'<div class="stuck" data-exercise="{escape(exercise)}">{legend}{"".join(parts)}</div>'


def _masked(observation):
    """An observation with each blanked number (``#``, :func:`class_stats.observation`)
    shown as a marked <var>n</var>, not a run of hashes. Split before escaping: an
    escaped quote (``&#x27;``) holds a ``#`` of its own."""
    mark = '<var class="masked" title="a number that differs from learner to learner">n</var>'
    return mark.join(escape(part) for part in observation.split("#"))


def _not_graded(groups):
    """The learners whose latest notebook could not be graded, by the reason the grader
    gave (the unedited stub, a syntax error, a missing function)."""
    if not groups:
        return ""
    items = "".join(
        f'<li class="group"><span class="count">{g["count"]} \u00d7</span> '
        f'<span class="reason">{escape(g["observation"])}</span> {_names(g["learners"])}</li>'
        for g in groups)
    return (f'<h4 class="check">Could not be graded: {sum(g["count"] for g in groups)}</h4>'
            f'<ul class="groups not-graded">{items}</ul>')


def _names(learners):
    links = [_learner_link(n) for n in learners]
    shown, rest = links[:SHOWN_NAMES], links[SHOWN_NAMES:]
    more = (f"<details><summary>{len(rest)} more</summary>{' '.join(rest)}</details>"
            if rest else "")
    return f'<span class="who">{" ".join(shown)}{more}</span>'


def _table(exercise, learners, max_score):
    key = _id(exercise)
    heads = "".join(f'<th scope="col"><button type="button" class="sort" data-sort="{c}">'
                    f"{escape(label)}</button></th>" for c, label in COLUMNS)
    rows = "".join(_row(r, max_score) for r in learners)
    return (
        f'<div class="learners" id="{key}-learners">'
        f'<div class="filters"><label>Filter <input type="search" class="search" '
        f'placeholder="name or feedback"></label> <label>Show <select class="show">'
        '<option value="all">everyone</option><option value="late">late</option>'
        '<option value="short">below full marks</option><option value="ungraded">not graded'
        '</option><option value="never-submitted">never submitted</option>'
        '<option value="never-signed-in">never signed in</option></select></label> '
        '<span class="shown" aria-live="polite"></span></div>'
        f'<div class="scroll"><table><caption>{escape(exercise)}: one row a learner</caption>'
        f'<thead><tr>{heads}<th scope="col">feedback (latest)</th></tr></thead>'
        f'<tbody class="list">{rows}</tbody></table></div></div>')


def _row(r, max_score):
    failed = "".join(f"<li><strong>{escape(f['name'])}</strong><pre>{escape(f['output'])}</pre></li>"
                     for f in r["failed"])
    feedback = (f'<details><summary>{len(r["failed"])} failed</summary><ul>{failed}</ul></details>'
                if failed else "")
    if r.get("not_graded"):  # as the command line says it, once, not "Not run." per check
        feedback = f'<p class="not-graded">Not graded: {escape(r["not_graded"])}</p>'

    activity = f"{utc(r['last_activity']):%Y-%m-%d %H:%M}" if r["last_activity"] else "-"
    state = " ".join(name for name, on in (  # what the "Show" filter picks rows by
        ("late", r["late"]), ("ungraded", r["recorded"] is None),
        ("short", r["recorded"] is None or r["recorded"] < (max_score or 0)),
        ("never-submitted", not r["submissions"]), ("never-signed-in", r["signed_in"] is False)) if on)
    return (f'<tr data-state="{state}"><th scope="row" class="learner">'
            f'{_learner_link(r["learner"], r.get("lms_name"))}{_absent(r)}</th>'
            f'<td class="recorded">{_num(r["recorded"])}{_by_hand(r.get("set_by"))}</td>'
            f'<td class="best">{_num(r["best"])}</td>'
            f'<td class="latest">{_num(r["latest"])}</td>'
            f'<td class="submissions">{r["submissions"]}</td>'
            f'<td class="late">{_late(r)}</td>'
            f'<td class="activity">{activity}</td><td class="feedback">{feedback}</td></tr>')


def _by_hand(said):
    """The note on a recorded grade an instructor set by hand in formgrader
    (:func:`~autograder.service.gradebook.recorded.set_by`), empty where none."""
    if not said:
        return ""
    review = "; graded again since: review it in formgrader" if said["review"] else ""
    return (f' <span class="set-by">(set by the instructor in formgrader; the autograder '
            f'gave {_num(said["autograder"])}{review})</span>')


def _absent(r):
    """A note after the name of a learner who never signed in (an LMS member: never
    launched the course from the LMS), or never submitted; or who was withdrawn."""
    if r.get("withdrawn"):
        return ' <span class="absent">(withdrawn)</span>'
    words = (("never launched" if r.get("lms_name") else "never signed in")
             if r["signed_in"] is False else
             "never submitted" if not r["submissions"] else "")
    return f' <span class="absent">({words})</span>' if words else ""


def _late(r):
    if not r["late"]:
        return "on time"
    return f"late by {duration_words(r['late_seconds'])} (\u2212{_num(r['penalty'])})"


def _progress(progress, exercises, names):
    heads = "".join(f'<th scope="col">{escape(n)}</th>' for n in exercises)
    rows = "".join(
        f'<tr><th scope="row">{_learner_link(who, names.get(who))}</th>'
        f'<td>{sum(c["done"] for c in p["exercises"].values())} / {len(exercises)}</td>'
        + "".join(_cell(p["exercises"].get(n)) for n in exercises)
        + f"<td>{_lessons(p['lessons'])}</td></tr>"
        for who, p in progress.items())
    return (f'<section id="progress" aria-labelledby="progress-h"><h2 id="progress-h">Progress '
            'across the course</h2><div class="scroll"><table><caption>Recorded score per '
            "exercise (\u2713: full marks) and the lessons each learner ran code on in the page"
            f'</caption><thead><tr><th scope="col">learner</th><th scope="col">exercises done</th>'
            f'{heads}<th scope="col">lessons run</th></tr></thead><tbody>{rows}</tbody></table>'
            "</div></section>")


def _lessons(lessons):
    return ", ".join(f'{escape(name)} ({r["runs"]}\u00d7)' for name, r in sorted(lessons.items())) or "none"


def _cell(cell):
    if cell is None:
        return "<td>not started</td>"
    mark = " \u2713" if cell["done"] else ""
    return f"<td>{_num(cell['recorded'])} / {_num(cell['max_score'])}{mark}</td>"


def utc(epoch):
    """``epoch`` seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


def _learner_link(name, lms_name=None):
    """The learner's user name, a link to their history, and the LMS's name for them."""
    shown = f' <span class="lms-name">{escape(lms_name)}</span>' if lms_name else ""
    return f'<a href="./?learner={quote(name, safe="")}">{escape(name)}</a>{shown}'


def _id(name):
    return "ex-" + "".join(ch if ch.isalnum() else "-" for ch in name)


def _num(value):
    """Points as every view prints them (:func:`autograder.defaults.points_text`)."""
    return "-" if value is None else points_text(value)
