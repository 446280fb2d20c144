"""Where a class is stuck: the numbers behind the instructors' class page, read
from the store at request time (no HTML here: :mod:`autograder.service.class_views.class_page`
renders them, :mod:`autograder.service.class_views.class_plots` draws them).

A failing check's *observation* is the ``Got:`` line of its feedback
(:mod:`autograder.feedback`) with only what varies with the random inputs or
with the learner's layout blanked (:func:`observation`): float values, the index
and size of the largest difference, how many elements differ, a line number and
the quoted line of code. Counts and shapes stay: "donates 0 of its 2 arguments"
(no donation) and "donates 1 of its 2 arguments" (the wrong one) are two
mistakes, and two learners who donated nothing with different random inputs are
one.
"""
import re
from collections import defaultdict

from autograder.exercises import names as registered_names
from autograder.service.class_views.class_view import summary
from autograder.service.class_views.roster import Roster

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
CODE = re.compile(r"`[^`]*`?")  # the learner's own line, quoted by feedback.where_text
# integers that vary with the inputs or the layout: by the word before (or after) them
PLACED = re.compile(rf"(?<![\w.])(index|line|difference is|relative|got|expected)( )"
                    rf"({_NUM}|\({_NUM}(?:, ?{_NUM})*,?\))(?!\w|\.\d)")
DIFFER = re.compile(rf"(?<![\w.])({_NUM})( of \d+ elements? differ)")
FLOAT = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?(?!\w|\.\d)")
GOT = "Got:"


def observation(output):
    """The normalised observation of a failed check's ``output`` (str): its ``Got:``
    line (the first line when it has none), spaces squeezed, with ``#`` for each float
    value, for the integers :data:`PLACED` and :data:`DIFFER` name (an index, a line
    number, a difference, how many elements differ) and ``\u2026`` for quoted code.
    Other integers (counts of arguments, leaves, calls; shapes; byte totals) stay."""
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    got = next((line for line in lines if line.startswith(GOT)), lines[0] if lines else "")
    got = CODE.sub("`\u2026`", got)
    got = PLACED.sub(lambda m: m[1] + m[2] + "#", got)
    got = DIFFER.sub(lambda m: "#" + m[2], got)
    return " ".join(FLOAT.sub("#", got).split())


def class_data(store, rule, deadlines=None, roster=None):
    """``{"exercises": {name: {...}}, "progress": {learner: {...}}, "names": {learner: the
    LMS's display name}}`` (see :func:`_progress`).

    ``roster`` (:class:`~autograder.service.class_views.roster.Roster`, or None: whoever submitted):
    every learner of it has a row in every exercise, submitted or not, every released
    exercise is listed, and instructors' submissions are left out.

    Per exercise: ``max_score``, ``recorded_rule``, ``due`` (the course's due date,
    aware UTC datetime or None), ``learners`` (a list of rows, by name: ``learner``,
    ``recorded``, ``best``, ``latest``, ``submissions``, ``late`` (bool), ``signed_in``
    (True, False: never signed in to the hub, None: not known), ``lms_name`` (the LMS's
    display name, or None), ``withdrawn`` (bool),
    ``late_seconds`` and ``penalty`` (points) of the recorded one, ``last_activity`` (epoch s), ``failed``
    (the latest result's
    failed checks: ``name``, ``output``; none when they did not run), ``not_graded`` (why
    the latest result's checks did not run, or None)), ``not_graded`` (those learners
    grouped by reason: ``[{"observation", "count", "learners"}]``), ``checks`` (``name``, ``passed``,
    ``learners``, ``pass_rate``, ``groups``: ``[{"observation", "count",
    "learners"}]``, most learners first), ``scores`` (recorded scores, floats) and
    ``times`` (each submission's epoch seconds, oldest first; regrades left out).
    """
    roster = roster or Roster()
    rows = roster.learner_rows(store.submissions())
    view = summary(store, rule, deadlines, rows)
    times = defaultdict(list)
    for row in rows:
        if not row.regrade:
            times[(row.exercise, row.learner)].append(row.submitted_at)
    exercises = {name: _exercise(name, view.get(name) or _untried(rule, roster.points.get(name)),
                                 times, deadlines, roster)
                 for name in course_order(set(view) | set(roster.exercises))}
    runs = {who: r for who, r in store.runs().items() if who not in roster.instructors}
    return {"exercises": exercises, "progress": _progress(exercises, runs), "names": roster.names}


def course_order(names):
    """``names`` in the course's order (the registry's, :data:`autograder.exercises.NAMES`),
    then any the registry no longer has, by name."""
    registered = {name: i for i, name in enumerate(registered_names())}
    return sorted(names, key=lambda n: (registered.get(n, len(registered)), n))


def _untried(rule, points):
    """The summary of a released exercise nobody submitted (``points``: the gradebook's)."""
    return {"max_score": points, "recorded_rule": rule, "learners": {}, "checks": []}


NOBODY: dict[str, object] = {"submissions": 0, "recorded": None, "best": None, "latest": None,
          "late_seconds": 0.0, "penalty": 0.0, "feedback": [], "not_graded": None}


def _exercise(name, ex, times, deadlines, roster):
    known = dict.fromkeys(roster.learners, NOBODY) | ex["learners"]
    learners = [dict(_learner(who, w, times.get((name, who), []), roster.learners.get(who)),
                     lms_name=roster.names.get(who), withdrawn=who in roster.withdrawn)
                for who, w in sorted(known.items())]
    groups = _groups(learners)
    checks = [dict(c, groups=groups.get(c["name"], [])) for c in ex["checks"]]
    return {"max_score": ex["max_score"], "recorded_rule": ex["recorded_rule"],
            "due": deadlines.course_due(name) if deadlines else None,
            "learners": learners, "checks": checks, "not_graded": _not_graded(learners),
            "scores": [r["recorded"] for r in learners if r["recorded"] is not None],
            "times": sorted(t for (exercise, _), ts in times.items() if exercise == name for t in ts)}


def _learner(name, w, times, signed_in):
    if signed_in is False and w["submissions"]:  # submitted before the hub knew them
        signed_in = True
    return {"learner": name, "signed_in": signed_in,
            "recorded": w["recorded"], "set_by": w.get("set_by"), "best": w["best"],
            "latest": w["latest"], "submissions": w["submissions"], "late": w["late_seconds"] > 0,
            "late_seconds": w["late_seconds"], "penalty": w["penalty"], "last_activity": max(times, default=None),
            "not_graded": w.get("not_graded"),  # its checks did not run: the reason, once
            "failed": [] if w.get("not_graded") else [
                {"name": t["name"], "output": t["output"]} for t in w["feedback"]
                if t["status"] != "passed"]}


def _groups(learners):
    """``{check: [group, ...]}``: the learners whose latest result failed each check,
    by observation, the largest group first."""
    by = defaultdict(lambda: defaultdict(list))
    for row in learners:
        for failed in row["failed"]:
            by[failed["name"]][observation(failed["output"])].append(row["learner"])
    return {check: sorted(({"observation": obs, "count": len(who), "learners": who}
                           for obs, who in groups.items()),
                          key=lambda g: (-g["count"], g["observation"]))
            for check, groups in by.items()}


def _not_graded(learners):
    """The learners whose latest notebook could not be graded, grouped by the reason (its
    first line, as the command line words it: a missing function's name stays), the
    largest group first."""
    by = defaultdict(list)
    for row in learners:
        if row["not_graded"]:
            by[row["not_graded"].strip().splitlines()[0]].append(row["learner"])
    return sorted(({"observation": why, "count": len(who), "learners": who}
                   for why, who in by.items()), key=lambda g: (-g["count"], g["observation"]))


def _progress(exercises, runs):
    """``{learner: {"exercises": {exercise: {"recorded", "max_score", "done"}},
    "lessons": {lesson: {"runs", "last_at"}}}}``; ``done``: the recorded score is
    the exercise's full marks; ``runs``: :meth:`Store.runs`."""
    progress = defaultdict(lambda: {"exercises": {}, "lessons": {}})
    for name, ex in exercises.items():
        for row in ex["learners"]:
            progress[row["learner"]]  # every learner has a row, who never submitted too
            if not row["submissions"] and row["recorded"] is None:
                continue  # "not started"
            full = row["recorded"] is not None and row["recorded"] >= (ex["max_score"] or 0)
            progress[row["learner"]]["exercises"][name] = {
                "recorded": row["recorded"], "max_score": ex["max_score"], "done": full}
    for learner, lessons in runs.items():
        progress[learner]["lessons"] = lessons
    return dict(sorted(progress.items()))
