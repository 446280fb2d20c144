"""When and how the gradebook mirror runs: the gradebook thread's policy.

Each round (:meth:`GradebookSync.round`) writes every learner's recorded grade of the
exercises with newly graded submissions (:meth:`GradebookSync.once`), writes them all again
when the late policy or a deadline changed (:meth:`GradebookSync.deadlines`), and keeps the
class's enrolments and drops (:class:`~autograder.service.class_views.roster.Keeper`). One
process at a time writes the gradebook: it holds the store's lock :data:`LOCK`
(nbgrader's rows are not safe to create from two writers at once).
"""
import dataclasses
import logging

from sqlalchemy.exc import SQLAlchemyError

from autograder.service.class_views import roster
from autograder.service.gradebook.mirror import NotReady
from autograder.service.gradebook.out_of_date import DEADLINES_MARK
from autograder.service.gradebook.recorded import late_by, recorded
from autograder.service.store.rows import Mirrored

log = logging.getLogger("autograder.service")
LOCK = "gradebook"  # the store's named lock (Store.take_lock) of the process writing it
ROUND = 50  # recorded grades written per gradebook transaction
GRADEBOOK_LOCK_S = 120.0  # how long the gradebook thread's lock holds unless renewed


class GradebookTaken(Exception):
    """Another process holds the gradebook's lock now (ours ran out during a long pass):
    what this pass chose may be older than what that process writes."""


class GradebookSync:
    """The gradebook thread's rounds for ``store`` into ``mirror``
    (:class:`~autograder.service.gradebook.mirror.Mirror`): ``rule`` is which graded
    submission the gradebook holds (``best`` or ``latest``), ``owner`` the name the lock
    is held under, ``stopping`` a :class:`threading.Event` that ends a pass between rounds."""

    def __init__(self, store, mirror, rule, owner, stopping):
        self.store, self.mirror, self.rule = store, mirror, rule
        self.owner, self.stopping = owner, stopping
        self.keeper = roster.Keeper(store, mirror)  # the class's enrolments and drops

    def take(self):
        """Hold the gradebook's lock (taken or renewed); False while another process does."""
        return self.store.take_lock(LOCK, self.owner, GRADEBOOK_LOCK_S)

    def round(self):
        """One round of the gradebook thread: :meth:`once`, then :meth:`deadlines`
        and the class's enrolments and drops (:class:`~autograder.service.class_views.roster.Keeper`),
        even when the first could not write everything (a grade the gradebook cannot take
        yet holds up no deadline change). The first problem, one other than such a grade
        first (one learner's grade the gradebook cannot take must not hide it), or None.
        A fault of the store is raised (the thread retries it with backoff); so is one of
        a PostgreSQL gradebook, which is the store's database."""
        problems = []
        for step in (self.once, self.deadlines, self.keeper.round):
            try:
                step()
            except SQLAlchemyError:
                raise
            except Exception as exc:
                problems.append(exc)
                if isinstance(exc, GradebookTaken):
                    break  # the other process's round now
        return next((p for p in problems if not isinstance(p, NotReady)),
                    problems[0] if problems else None)

    def deadlines(self):
        """When the late policy, a due date or an extension changed since the gradebook's
        penalties were written (:meth:`Deadlines.state` against the store's mark
        :data:`DEADLINES_MARK`), write every learner's recorded grade again under the new
        ones: the recorded submission itself may change (a penalty moves the best one).
        Until this is done, /api/health and the class page say the gradebook is out of date."""
        state = self.mirror.deadlines.state()
        if self.store.mark(DEADLINES_MARK) == state:
            return
        lateness, staff = late_by(self.mirror.deadlines), roster.staff(self.store)
        keeps = [chosen for learner, exercise in self.store.graded_pairs()
                 if learner not in staff and (chosen := self._choose(learner, exercise, lateness))]
        errors = self._write_rounds(keeps, lateness)
        failed = [exc for _, exc in errors if not isinstance(exc, NotReady)]
        if failed:
            raise failed[0]  # the whole pass again next round
        if self.stopping.is_set():
            return
        # A grade the gradebook cannot take yet (NotReady) is handed to once(), which
        # writes it when it can, under the dates then in force; this pass is done.
        self.store.unsync([keep.id for keep, _ in errors])
        self.store.set_mark(DEADLINES_MARK, state)
        log.info("gradebook penalties written under the current late policy and deadlines")
        if errors:
            raise errors[0][1]

    def _choose(self, learner, exercise, lateness):
        """``(recorded row, ids of the graded rows it was chosen from)`` for ``learner``'s
        ``exercise`` (``self.rule``, recorded.py), or None when none is graded. Only those
        rows may be marked superseded once it is written: one graded after this read was
        never weighed, and stays unsynced for the next round."""
        rows = self.store.graded(learner, exercise, notebooks=False)
        keep = recorded(rows, self.rule, lateness)
        return None if keep is None else (keep, [r.id for r in rows])

    def _write_rounds(self, keeps, lateness):
        """Write the recorded submissions ``keeps`` (:meth:`_choose`'s pairs) into the
        gradebook, :data:`ROUND` per transaction (:meth:`Mirror.writing`: one gradebook
        session, readers see a round whole), each marked recorded in the store once its
        round is committed. A round that fails is written again one submission at a time,
        so one bad row holds up no other. Returns ``[(row, error)]`` for those that could
        not be written (retried later). The gradebook's lock is renewed before each round;
        raises :class:`GradebookTaken`, writing no more, when another process holds it."""
        errors = []
        for start in range(0, len(keeps), ROUND):
            if self.stopping.is_set():
                break
            if not self.store.take_lock(LOCK, self.owner, GRADEBOOK_LOCK_S):
                raise GradebookTaken("another process writes the gradebook now")
            chunk = keeps[start:start + ROUND]
            try:
                errors += self._write(chunk, lateness)
            except Exception:  # the round again, row by row, below
                for keep in chunk:
                    try:
                        errors += self._write([keep], lateness)
                    except Exception as exc:  # retried on a later round
                        errors.append((keep[0], exc))
        return errors

    def _write(self, keeps, lateness):
        """One transaction of :meth:`_write_rounds`; a row the gradebook cannot take yet
        (:class:`~autograder.service.gradebook.mirror.NotReady`) is left out and returned."""
        written, errors = [], []
        with self.mirror.writing() as book:
            for keep, weighed in keeps:
                keep = dataclasses.replace(keep, notebook=self.store.notebook(keep.id))
                try:
                    book.record(keep, lateness(keep).penalty)
                except NotReady as exc:
                    errors.append((keep, exc))
                else:
                    written.append((keep, weighed))
        for keep, weighed in written:
            self.store.mark_recorded(keep.learner, keep.exercise, keep.id, weighed)
        return errors

    def once(self):
        """Mirror each learner's recorded submission (``self.rule``, recorded.py) of every
        exercise with newly graded submissions; the others it was chosen from are marked
        superseded.

        A pair that cannot be written stays unsynced (retried later) without
        holding up the others; the first such error is raised at the end.
        """
        pairs = dict.fromkeys((r.learner, r.exercise) for r in self.store.unsynced())
        lateness, staff = late_by(self.mirror.deadlines), roster.staff(self.store)
        keeps = []
        for learner, exercise in pairs:
            chosen = self._choose(learner, exercise, lateness)
            if chosen is None:  # regraded meanwhile: its new grading is synced when done
                continue
            keep, weighed = chosen
            if learner in staff:  # an instructor's test: never a student of nbgrader's
                self.store.mark_recorded(learner, exercise, "", weighed)  # all superseded
                continue
            if keep.gradebook == Mirrored.RECORDED:  # already there: only the others to mark
                self.store.mark_recorded(learner, exercise, keep.id, weighed)
            else:
                keeps.append(chosen)
        errors = self._write_rounds(keeps, lateness)
        if errors:
            raise errors[0][1]
