"""Regrade an exercise for the whole class after its hidden tests changed.

    python -m autograder.service.regrade EXERCISE [--every] [--wait]   (--db, --course as for the service)

0. Refuses, changing nothing, when the exercise's hidden tests on disk cannot be loaded
   (:func:`autograder.exercises.current.version`).
1. Sets the points of the exercise's graded cells in nbgrader's gradebook to
   those of its hidden tests (``Mirror.points_disagree(fix=True)``), so
   ``nbgrader export`` totals follow the tests. (``nbgrader generate_assignment``
   itself refuses to change an assignment that has submissions.)
2. Queues each learner's recorded submission (:mod:`autograder.service.gradebook.recorded`)
   again, and their latest attempt when that is another one (so "latest" on the class
   page is still their latest attempt, graded by the tests now), or with ``--every``
   every graded attempt, with its notebook and its original submission time
   (deadlines still apply); the results graded again stay in the history as
   ``regraded``, the learner's other attempts as ``set_aside`` (not graded again),
   and only the new results count (:meth:`Store.requeue`),
   beside any submission graded while this command ran (it was not among those read).
   Each new submission says what it regrades (``regrade_of``: the old score, points
   and version), so each learner reads old -> new beside it.

The running service or workers grade the regrades as they grade anything else,
with the hidden tests on disk now (they load them again when they change), taking
turns with learners' new submissions (the regrade is one client of the queue,
:meth:`Store.claim`). With ``--wait`` this command waits for them and prints each
learner's old -> new score.
"""
import sys
import time

from autograder import exercises
from autograder.defaults import points_text
from autograder.service import config
from autograder.service.store.rows import WAITING

WAIT_POLL_S = 1.0


def main(argv=None):
    from autograder.exercises import current
    from autograder.service.gradebook.recorded import late_by

    p = config.parser("python -m autograder.service.regrade",
                      "Grade every learner's recorded submission of an exercise again.")
    p.add_argument("exercise")
    p.add_argument("--every", action="store_true",
                   help="regrade every graded attempt, not only each learner's recorded one")
    p.add_argument("--wait", action="store_true",
                   help="wait until the regrades are graded and print old -> new per learner")
    args = p.parse_args(argv)
    config.known_name(p, "exercise", args.exercise, exercises.names(),
                      " (registered in autograder/exercises/__init__.py)")
    try:
        version = current.version(args.exercise)
    except current.NotLoadable as exc:
        print(f"{args.exercise}: nothing regraded: {exc}", file=sys.stderr)
        return 1
    store, mirror = config.open_store(args)
    for change in mirror.points_disagree(args.exercise, fix=True):
        print(f"{args.exercise}: gradebook points set to the hidden tests' ({change})")
    made = queue(store, args.exercise, args.recorded, late_by(mirror.deadlines), args.every)
    learners = len({store.get(i).learner for i in made})
    what = "graded submission(s)" if args.every else "recorded submission(s)"
    count = len(made) if args.every else learners
    also = "" if args.every or len(made) == learners else (
        f"; and {len(made) - learners} later attempt(s), each the learner's latest")
    print(f"{args.exercise}: {count} {what} queued for grading with the current hidden "
          f"tests (version {version[:12]}){also}")
    if args.wait:
        for line in old_to_new(store, made):
            print(line)
    return 0


def queue(store, exercise, rule, lateness, every=False):
    """Queue ``exercise``'s regrades (step 2 above): each learner's recorded submission
    under ``rule`` and ``lateness`` (:func:`~autograder.service.gradebook.recorded.recorded`) in
    place of every graded one read, or with ``every`` each graded one in its own place.
    The new ids. Only submissions read here are replaced: one graded meanwhile (a learner
    submitting during the regrade) still counts."""
    from autograder.service.gradebook.recorded import attempt_order, recorded

    replacing = {}
    for learner in store.learners(exercise):
        rows = store.graded(learner, exercise, notebooks=False)
        if every:
            replacing.update((row.id, [row.id]) for row in rows)
        elif (keep := recorded(rows, rule, lateness)) is not None:
            replacing[keep.id] = [row.id for row in rows]
            newest = max(rows, key=attempt_order)  # their latest feedback: the tests' now too
            if newest.id != keep.id:
                replacing[newest.id] = [newest.id]
    return store.requeue(replacing)


def old_to_new(store, ids):
    """Once every one of ``ids`` (regrades) is graded: one line per regrade,
    ``learner: old/points -> new/points``, in the learners' order."""
    while True:
        rows = [store.get(i) for i in ids]
        if all(r is None or r.status not in WAITING for r in rows):
            break
        time.sleep(WAIT_POLL_S)
    lines = []
    for row in sorted((r for r in rows if r), key=lambda r: (r.learner, r.submitted_at)):
        old = _points(row.regrade_of)
        new = "not graded" if row.result is None else _points(
            {"score": row.result.score, "max_score": row.result.max_score})
        lines.append(f"{row.learner}: {old} -> {new}")
    return lines


def _points(data):
    if not data or data.get("score") is None:
        return "?"
    return f"{points_text(data['score'])}/{points_text(data['max_score'])}"


if __name__ == "__main__":
    sys.exit(main())
