"""What the API and the class views read of the stored submissions: one, a learner's
or the class's, the queue's pace, and which results older grading made."""
import statistics
import time

from sqlalchemy import and_, func, or_, select

from autograder.service.store.rows import WAITING, Role, Status, Submission
from autograder.service.store.schema import processes, submissions


class Listings:
    """What the views read of the submissions; a part of
    :class:`~autograder.service.store.Store`."""

    # -- reading ----------------------------------------------------------
    def get(self, sub_id):
        """The :class:`Submission` ``sub_id`` (without the notebook), or None.

        A queued one also has ``queue_position`` (1 = next).
        """
        s = submissions.c
        cols = [c for c in submissions.c if c.name not in ("notebook", "client")]
        with self._read() as conn:
            row = conn.execute(select(*cols).where(s.id == sub_id)).mappings().first()
            if row is None:
                return None
            position = None
            if row["status"] == Status.QUEUED:
                position = conn.execute(
                    select(func.count()).select_from(submissions).where(
                        s.status == Status.QUEUED, s.seq < row["seq"])).scalar() + 1
        return Submission.of(row, queue_position=position)

    def statuses(self, ids):
        """``{id: status}`` of the submissions ``ids`` (those that exist), in one read."""
        s = submissions.c
        with self._read() as conn:
            return dict(conn.execute(select(s.id, s.status).where(s.id.in_(list(ids)))).all())

    def notebook(self, sub_id):
        """The submitted notebook's bytes (as nbgrader's file holds them), or None."""
        s = submissions.c
        with self._read() as conn:
            return conn.execute(select(s.notebook).where(s.id == sub_id)).scalar()

    def pace(self, window=600.0):
        """``(seconds per grading, grading slots alive)`` from recent history.

        Seconds are the median grading time of the last 50 results in ``window``
        seconds (None when there are none): the median, so that one slow grading (the
        first after a start, which waits for the zygote to import JAX, or a learner's
        timeout) does not multiply every wait the API promises. Slots count the threads
        of worker processes seen in the last 30 s.
        """
        s, p = submissions.c, processes.c
        now = time.time()
        with self._read() as conn:
            recent = conn.execute(select(s.finished_at - s.started_at).where(
                s.status == Status.DONE, s.finished_at >= now - window).order_by(
                s.seq.desc()).limit(50)).scalars().all()
            slots = conn.execute(select(func.coalesce(func.sum(p.slots), 0)).where(
                p.role == Role.WORKER, p.seen_at >= now - 30)).scalar()
        return (float(statistics.median(recent)) if recent else None), int(slots)

    def submissions(self, learner=None):
        """Every submission (of ``learner``, if given) as :class:`Submission` without the
        notebook, oldest first; ``regrade`` true for an instructor's
        regrade of an earlier one (the hub's listings and class view)."""
        s = submissions.c
        cols = [s.seq, s.id, s.learner, s.exercise, s.status, s.submitted_at, s.started_at,
                s.finished_at, s.replaced_by, (s.client == "regrade").label("regrade"), s.result,
                s.version, s.regrade_of]
        query = select(*cols).order_by(s.seq)
        if learner is not None:
            query = query.where(s.learner == learner)
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        return [Submission.of(r) for r in rows]

    def learners(self, exercise):
        """Every learner with a graded submission of ``exercise``, sorted."""
        s = submissions.c
        with self._read() as conn:
            return sorted(conn.execute(select(s.learner).distinct().where(
                s.exercise == exercise, s.status == Status.DONE)).scalars())

    def regrading(self):
        """``{exercise: (submissions, learners)}`` counting regrades that wait to be graded
        (queued or running)."""
        s = submissions.c
        with self._read() as conn:
            rows = conn.execute(select(s.exercise, func.count(), func.count(s.learner.distinct()))
                                .where(s.client == "regrade", s.status.in_(list(WAITING)))
                                .group_by(s.exercise)).all()
        return {ex: (n, learners) for ex, n, learners in rows}

    def stale(self, versions):
        """``{exercise: (submissions, learners)}`` counting graded submissions (``done``,
        the ones a grade is chosen from) whose result another version of the exercise's
        grading made than ``versions[exercise]`` (its version now), or an unknown one."""
        s = submissions.c
        older = [and_(s.exercise == ex, or_(s.version.is_(None), s.version != v))
                 for ex, v in versions.items()]
        if not older:
            return {}
        with self._read() as conn:
            rows = conn.execute(select(s.exercise, func.count(), func.count(s.learner.distinct()))
                                .where(s.status == Status.DONE, or_(*older))
                                .group_by(s.exercise)).all()
        return {ex: (n, learners) for ex, n, learners in rows}

    def graded_pairs(self):
        """Every ``(learner, exercise)`` with a graded submission, sorted."""
        s = submissions.c
        with self._read() as conn:
            return sorted(tuple(r) for r in conn.execute(
                select(s.learner, s.exercise).distinct().where(s.status == Status.DONE)))
