"""The gradebook mirror's state in the store: which graded submissions are written into
nbgrader's gradebook (the ``gradebook`` column) and course-wide marks (``marks``)."""

from sqlalchemy import and_, or_, select, update

from autograder.service.store.rows import Mirrored, Status, Submission
from autograder.service.store.schema import marks, submissions


class Mirroring:
    """The gradebook mirror's state in the store; a part of
    :class:`~autograder.service.store.Store`."""

    # -- gradebook mirroring ------------------------------------------------
    def unsynced(self):
        """Done submissions not yet mirrored into the gradebook (:class:`Submission`
        without its notebook and result: the mirror reads those of the one it writes),
        oldest first."""
        s = submissions.c
        with self._read() as conn:
            rows = conn.execute(select(s.seq, s.id, s.learner, s.exercise, s.status,
                                       s.submitted_at).where(
                s.status == Status.DONE, s.gradebook.is_(None)).order_by(s.seq)).mappings().all()
        return [Submission.of(r) for r in rows]

    def graded(self, learner, exercise, notebooks=True):
        """``learner``'s graded submissions of ``exercise`` (:class:`Submission`), oldest
        first, as the mirror writes them (notebook, ``gradebook`` state); without the
        notebooks (``notebook`` None) when ``notebooks`` is false, for a view of scores."""
        s = submissions.c
        cols = [s.seq, s.id, s.learner, s.exercise, s.status, s.submitted_at, s.result,
                s.gradebook] + ([s.notebook] if notebooks else [])
        with self._read() as conn:
            rows = conn.execute(select(*cols).where(
                s.learner == learner, s.exercise == exercise, s.status == Status.DONE)
                .order_by(s.seq)).mappings().all()
        return [Submission.of(r) for r in rows]

    def unsync(self, sub_ids):
        """The graded submissions ``sub_ids`` are to be written into the gradebook again
        (their pairs are unsynced: :meth:`unsynced`)."""
        s = submissions.c
        if sub_ids:
            with self.engine.begin() as conn:
                conn.execute(update(submissions).where(s.id.in_(list(sub_ids)),
                                                       s.status == Status.DONE)
                             .values(gradebook=None))

    def mark_recorded(self, learner, exercise, sub_id, weighed):
        """``sub_id`` is in the gradebook as ``learner``'s grade for ``exercise``; the
        other graded submissions it was chosen from (the ids ``weighed``) and every regraded
        one are ``superseded``. One graded since that choice keeps its state: the mirror
        has not weighed it yet."""
        s = submissions.c
        mine = and_(s.learner == learner, s.exercise == exercise,
                    or_(and_(s.status == Status.DONE, s.id.in_(list(weighed))),
                        s.status.in_((Status.REGRADED, Status.SET_ASIDE))))
        with self.engine.begin() as conn:
            conn.execute(update(submissions).where(mine, s.id != sub_id)
                         .values(gradebook=Mirrored.SUPERSEDED))
            conn.execute(update(submissions).where(s.id == sub_id).values(gradebook=Mirrored.RECORDED))


    # -- course-wide marks -------------------------------------------------------
    def mark(self, name):
        """The value of mark ``name`` (str), or None when never set."""
        with self._read() as conn:
            return conn.execute(select(marks.c.value).where(marks.c.name == name)).scalar()

    def set_mark(self, name, value):
        with self.engine.begin() as conn:
            if not conn.execute(update(marks).where(marks.c.name == name)
                                .values(value=value)).rowcount:
                conn.execute(marks.insert().values(name=name, value=value))

    def remirror(self):
        """Every grade is to be written into the gradebook again (after a restore): each
        graded submission's gradebook state and the deadlines mark are cleared."""
        with self.engine.begin() as conn:
            conn.execute(update(submissions).where(submissions.c.gradebook.is_not(None))
                         .values(gradebook=None))
            conn.execute(marks.delete())
