"""Which of a learner's graded submissions of an exercise is their grade: the
recorded one. One rule, read by the gradebook mirror (what nbgrader's gradebook,
``nbgrader export`` and the class CSV hold) and by the class view, so all of them
give the same number.

The rule (``GRADER_RECORDED``, :data:`autograder.defaults.RECORDED`):

* ``best`` (the default): the highest score; the newest among equal scores. A
  later, worse attempt (an experiment, the unedited notebook uploaded by mistake)
  never lowers a grade, so learners may resubmit freely; PrairieLearn's default.
* ``latest``: the newest graded submission, whatever its score.
"""
from autograder import defaults, pipeline

RULES = defaults.RECORDED_RULES


def score(row):
    """The score of a graded submission row (``result`` parsed, ``exercise``); a float."""
    return float(pipeline.stored(row["result"], row["exercise"]).score)


def recorded(rows, rule):
    """The row that counts among ``rows`` (one learner's submissions of one exercise:
    dicts with ``seq``, ``status``, ``result``, ``exercise``), or None when none is
    graded. Raises ValueError for a rule not in :data:`RULES`."""
    graded = [r for r in rows if r["status"] == "done" and r["result"] is not None]
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} for the recorded grade; one of {', '.join(RULES)}")
    if not graded:
        return None
    if rule == "latest":
        return max(graded, key=lambda r: r["seq"])
    return max(graded, key=lambda r: (score(r), r["seq"]))
