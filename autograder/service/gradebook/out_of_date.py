"""Where recorded grades are out of date, in words: what ``/api/health`` warns and the
class page shows at its top, until it is put right.

* grades made by older hidden tests: a graded submission whose result records another
  version of its exercise's grading than the one on disk now
  (:mod:`autograder.exercises.current`), until ``python -m autograder.service.regrade``;
* a regrade under way: its submissions waiting to be graded again (their old grades
  count meanwhile, :func:`autograder.service.gradebook.recorded.counting`);
* late penalties in the gradebook (what ``nbgrader export`` and the class CSV hold)
  written under another late policy, due date or extension than those in force now
  (:meth:`~autograder.service.gradebook.lateness.Deadlines.state`), until the grading service's
  gradebook thread has written them again (within seconds while one runs);
* hidden tests that cannot be loaded now (their submissions wait, queued);
* points in the gradebook other than the hidden tests' (``nbgrader export``'s
  ``max_score`` is not what the service grades out of), until the regrade sets them;
* grades set by hand in nbgrader's formgrader (a manual score, extra credit) on a submission
  graded again since (a regrade, a better attempt): the manual score stays the grade in
  every view, as nbgrader keeps it, and nbgrader flags the cell for review, until the
  instructor reviews it in formgrader;
* hidden tests changed since release into a check the released gradebook cannot hold
  (:meth:`~autograder.service.gradebook.mirror.Mirror.unreleased`; their submissions wait,
  queued, until ``make release`` succeeds or the change is undone).
"""
from autograder.exercises import current

DEADLINES_MARK = "gradebook_deadlines"  # the store's mark: the Deadlines.state penalties follow


NAMED = 5  # learners named in a sentence before the rest are counted


def warnings(store, mirror, exercises):
    """Every sentence of the module (a list; empty when every recorded grade is up to
    date): :func:`versions`, :func:`unreleased`, :func:`points`, :func:`overrides`, then
    :func:`penalties`."""
    return (versions(store, exercises) + unreleased(mirror, exercises) + points(mirror, exercises)
            + overrides(mirror) + penalties(store, mirror))


def points(mirror, exercises):
    """Sentences on exercises whose gradebook points differ from their hidden tests'
    (:meth:`~autograder.service.gradebook.mirror.Mirror.points_disagree`): nbgrader's
    ``max_score`` is then not what the service grades out of."""
    return [f"{ex}: the gradebook's points differ from the hidden tests' ({'; '.join(d)}): "
            f"nbgrader export and the class CSV total the old points until you run "
            f"python -m autograder.service.regrade {ex}"
            for ex in exercises if (d := mirror.points_disagree(ex))]


def overrides(mirror):
    """Sentences on grades a person set by hand in nbgrader's formgrader on a submission
    graded again since (:meth:`~autograder.service.gradebook.mirror.Mirror.overridden`,
    ``review``): the manual score still counts, in every view, as in nbgrader."""
    said, review = [], {}
    for (ex, learner), manual in mirror.overridden().items():
        if manual.review:
            review.setdefault(ex, []).append(learner)
    for ex, learners in sorted(review.items()):
        named = ", ".join(learners[:NAMED]) + (f" and {len(learners) - NAMED} more"
                                               if len(learners) > NAMED else "")
        said.append(f"{ex}: {len(learners)} learner(s)' grade set by hand in formgrader was "
                    f"graded again since ({named}): the manual score still counts in every "
                    "view (the class page, api/class, api/standing, the LMS, nbgrader export, "
                    "the class CSV), as nbgrader keeps it; review the flagged cells in "
                    "formgrader, and clear the manual score there to take the autograder's")
    return said


def unreleased(mirror, exercises):
    """Sentences on hidden tests changed since release beyond what the gradebook holds."""
    return [why for _, why in sorted(mirror.unreleased(exercises).items())]


def versions(store, exercises):
    """Sentences on hidden tests that cannot be loaded and grades made by older ones."""
    current_versions, broken = current.loadable(exercises)
    said = [f"{ex}: {why}" for ex, why in sorted(broken.items())]
    for ex, (count, learners) in sorted(store.regrading().items()):
        said.append(f"{ex}: a regrade is under way: {count} submission(s) of {learners} "
                    "learner(s) wait to be graded again; until each is, its old grade counts "
                    "in every view (the class page, api/class, api/standing, nbgrader export, "
                    "the class CSV, the LMS)")
    for ex, (count, learners) in sorted(store.stale(current_versions).items()):
        said.append(f"{ex}: {count} graded submission(s) of {learners} learner(s) were graded "
                    "by older hidden tests than those on disk now; their grades stay as they "
                    f"were until you run python -m autograder.service.regrade {ex}")
    return said


def penalties(store, mirror):
    """The sentence on late penalties the gradebook holds under another policy or other
    deadlines, if it does (cheap: one read of the store; asked on every health check)."""
    if store.mark(DEADLINES_MARK) == mirror.deadlines.state() or not store.graded_pairs():
        return []
    return ["the gradebook's late penalties (nbgrader export, the class CSV) were written "
            "under another late policy or other deadlines than those in force now; the "
            "grading service is writing them again (the class page, api/class and "
            "api/standing already apply the new ones)"]
