"""The class as the store holds it, for the class views: the class summary (per exercise and learner:
recorded grade, lateness, latest feedback;
per check: pass rate), from the store's :class:`~autograder.service.store.rows.Submission` values.
"""
from collections import Counter

from autograder.service.gradebook.recorded import attempt_order, counting, grade, late_by, recorded, set_by


def summary(store, rule, deadlines=None, rows=None):
    """The class view of ``store`` (:func:`class_summary`), with ``deadlines`` (a
    :class:`~autograder.service.gradebook.lateness.Deadlines`; on time without it). ``rows``:
    ``store.submissions()`` when the caller has read them already (the class page
    reads them once)."""
    due = deadlines.due if deadlines else _no_due
    return class_summary(store.submissions() if rows is None else rows, rule,
                         late_by(deadlines), due)


def _no_due(exercise, learner):
    return None


def class_summary(rows, rule, lateness, due):
    """The class view: ``{exercise: {"max_score", "recorded_rule", "learners": {...},
    "checks": [...]}}``, from ``rows`` (:class:`~autograder.service.store.rows.Submission`
    values, oldest first). ``lateness(row)``: its
    :class:`~autograder.service.gradebook.lateness.Lateness`; ``due(exercise, learner)``: the
    aware datetime it is due for them, or None.

    For each learner: ``submissions`` (count, graded or not), ``recorded`` (their
    grade under ``rule``, see recorded.py: what the gradebook and the CSV hold, with an
    instructor's manual scores from formgrader: :func:`recorded.grade`), ``set_by``
    (:func:`recorded.set_by`: None, or who set it by hand and what the autograder gave) and
    ``recorded_id``; ``due`` (ISO, UTC, extension included, or None), and of the
    recorded submission ``late_seconds`` and ``penalty``;
    ``latest`` and ``best`` score among graded ones (points after each one's late penalty,
    as the recorded grade and api/standing count them), ``latest_id``
    and ``feedback`` (the latest result's tests: name, status, score, output), and
    ``not_graded``: why its checks did not run (the result's output, as the command line
    says it: the unedited stub, a syntax error, a missing function), None when they ran.
    ``latest`` is the latest attempt by submission time (a regrade of an earlier attempt
    is not it). For each check:
    ``passed`` learners (whose latest result passed it), ``learners`` whose latest result
    was graded (its checks ran: a learner whose latest notebook could not be graded is in
    neither), and ``pass_rate`` = passed / learners.
    """
    view, latest, rows_of = {}, {}, {}  # latest: exercise -> {learner: GradingResult}
    newest_of = {}  # (exercise, learner) -> their latest graded attempt (recorded.attempt_order)
    counts = {r.id for r in counting(rows)}  # a result a waiting regrade replaces counts still
    for row in rows:
        ex = view.setdefault(row.exercise, {"max_score": None, "recorded_rule": rule,
                                               "learners": {}, "checks": []})
        who = ex["learners"].setdefault(row.learner, {
            "submissions": 0, "recorded": None, "recorded_id": None, "due": None,
            "late_seconds": 0.0, "penalty": 0.0, "latest": None,
            "best": None, "latest_id": None, "feedback": [], "not_graded": None,
            "set_by": None})
        who["submissions"] += not row.regrade  # a regrade is not a submission of theirs
        rows_of.setdefault((row.exercise, row.learner), []).append(row)
        if row.id not in counts:
            continue
        result = row.result
        ex["max_score"] = result.max_score
        # after the late penalty, as the recorded grade and api/standing count it
        score = result.score - lateness(row).penalty
        who["best"] = score if who["best"] is None else max(who["best"], score)
        newest = newest_of.get((row.exercise, row.learner))
        if newest is not None and attempt_order(newest) > attempt_order(row):
            continue  # a regrade of an earlier attempt: not their latest
        newest_of[(row.exercise, row.learner)] = row
        latest.setdefault(row.exercise, {})[row.learner] = result
        who["latest"], who["latest_id"] = score, row.id
        who["feedback"] = [{"name": c.title, "status": c.status, "score": c.score,
                            "max_score": c.max_score, "output": c.output} for c in result.checks]
        who["not_graded"] = None if result.status == "graded" else result.output
    for (exercise, learner), mine in rows_of.items():
        who = view[exercise]["learners"][learner]
        when = due(exercise, learner)
        who["due"] = when.isoformat() if when else None
        keep = recorded(mine, rule, lateness)
        if keep is not None:
            late = lateness(keep)
            points, manual = grade(keep, lateness)  # an instructor's manual score counts
            who["recorded"], who["recorded_id"] = points, keep.id
            who["set_by"] = set_by(manual, keep, lateness)
            who["late_seconds"], who["penalty"] = round(late.seconds, 1), late.penalty
    for exercise, ex in view.items():
        # a notebook whose checks did not run (the stub, a syntax error) failed no check:
        # it is counted apart (``not_graded``), not as a failure of every check
        graded = [r for r in latest.get(exercise, {}).values() if r.status == "graded"]
        passes = Counter(grade_id for r in graded  # each result once per check it passed
                         for grade_id in {c.grade_id for c in r.checks if c.status == "passed"})
        for check in graded[0].checks if graded else ():  # by grade_id, in the first's order
            passed = passes[check.grade_id]
            ex["checks"].append({"name": check.title, "passed": passed, "learners": len(graded),
                                 "pass_rate": round(passed / len(graded), 4)})
    return view
