"""Regrade an exercise for the whole class after its hidden tests changed.

    python -m autograder.service.regrade EXERCISE     (--db, --course as for the service)

1. Sets the points of the exercise's graded cells in nbgrader's gradebook to
   those of its hidden tests (``Mirror.points_disagree(fix=True)``), so
   ``nbgrader export`` totals follow the tests. (``nbgrader generate_assignment``
   itself refuses to change an assignment that has submissions.)
2. Queues each learner's recorded submission (:mod:`autograder.service.recorded`)
   again, with its notebook and its original submission time (deadlines still
   apply); the learner's earlier results stay in their history as ``regraded``,
   and only the new result counts (:meth:`Store.requeue`).

The running service or workers grade the regrades as they grade anything else,
taking turns with learners' new submissions (the regrade is one client of the
queue, :meth:`Store.claim`), so a class still submitting is not starved.
"""
import sys

from autograder import exercises
from autograder.service import config


def main(argv=None):
    from autograder.service.recorded import late_by, recorded

    p = config.parser("python -m autograder.service.regrade",
                      "Grade every learner's recorded submission of an exercise again.")
    p.add_argument("exercise")
    args = p.parse_args(argv)
    if args.exercise not in exercises.names():
        p.error(f"unknown exercise {args.exercise!r}; known: {', '.join(exercises.names())}")
    store, mirror = config.open_store(args)
    for change in mirror.points_disagree(args.exercise, fix=True):
        print(f"{args.exercise}: gradebook points set to the hidden tests' ({change})")
    lateness = late_by(mirror.deadlines)
    keep = [recorded(store.graded(learner, args.exercise), args.recorded, lateness)
            for learner in store.learners(args.exercise)]
    made = store.requeue([row["id"] for row in keep if row is not None])
    print(f"{args.exercise}: {len(made)} recorded submission(s) queued for grading with the "
          "current hidden tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
