"""The instructor's command that sets the grading service's deadlines in nbgrader's
gradebook (read back by :mod:`autograder.service.gradebook.lateness`).

    python -m autograder.service.deadlines due EXERCISE "2026-12-10 17:00"   # UTC
    python -m autograder.service.deadlines due EXERCISE none                # no deadline
    python -m autograder.service.deadlines extend EXERCISE LEARNER HOURS
    python -m autograder.service.deadlines show

(``--db`` and ``--course`` as for the service, or ``GRADER_DB`` and ``GRADER_COURSE``.)
"""
import datetime
import sys
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder import exercises
from autograder.service import config
from autograder.service.gradebook.mirror import update_or_create_submission


def main(argv=None):
    p = config.parser("python -m autograder.service.deadlines",
                      "Set or show the due dates and extensions in nbgrader's gradebook.")
    sub = p.add_subparsers(dest="command", required=True)
    due = sub.add_parser("due", help="set an exercise's due date (UTC), or none")
    due.add_argument("exercise")
    due.add_argument("when", help='"YYYY-MM-DD HH:MM" in UTC, or none')
    ext = sub.add_parser("extend", help="give a learner an extension on an exercise")
    ext.add_argument("exercise")
    ext.add_argument("learner")
    ext.add_argument("hours", type=float)
    sub.add_parser("show", help="print every due date and extension")
    args = p.parse_args(argv)
    if args.command != "show":
        config.known_name(p, "exercise", args.exercise, exercises.names(),
                          " (registered in autograder/exercises/__init__.py)")
    mirror = config.mirror_of(args)
    try:
        when = None if getattr(args, "when", "none") == "none" else \
            datetime.datetime.fromisoformat(args.when)
    except ValueError:
        p.error(f'{args.when!r} is not a date: write "YYYY-MM-DD HH:MM" (UTC), or none')
    with Gradebook(mirror.url) as gb:
        if args.command == "due":
            gb.update_or_create_assignment(args.exercise, duedate=when)
        elif args.command == "extend":
            try:
                gb.find_assignment(args.exercise)
            except MissingEntry:
                p.error(f"{args.exercise} is not in the gradebook: release it first (make release)")
            config.known_name(p, "learner", args.learner, known_learners(gb, args),
                              " (nbgrader's students and everyone who submitted; add one with "
                              "nbgrader db student add NAME)")
            gb.update_or_create_student(args.learner)
            update_or_create_submission(gb, args.exercise, args.learner,
                                        extension=datetime.timedelta(hours=args.hours))
        for assignment in gb.assignments:
            print(f"{assignment.name}: due {assignment.duedate or 'never'}" + (" UTC" if assignment.duedate else ""))
            for s in assignment.submissions:
                if s.extension:
                    print(f"  {s.student_id}: extension {s.extension}")
    return 0


def known_learners(gb, args):
    """The learners an extension may name: nbgrader's students in ``gb`` and everyone with a
    submission in the service's store (when it exists). Names, a set."""
    from autograder.service.store import Store, database_url
    names = {s.id for s in gb.students}
    url = database_url(args.db)
    if url.get_backend_name() != "sqlite" or (url.database and Path(url.database).exists()):
        store = Store(url)
        names.update(row.learner for row in store.submissions())
    return names


if __name__ == "__main__":
    sys.exit(main())
