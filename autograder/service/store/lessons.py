"""Which lessons each signed-in learner ran code on in the page (course-run.js)."""
import time

from sqlalchemy import and_, select, update

from autograder.service.store.schema import lesson_runs


class Lessons:
    """Which lessons each learner ran code on; a part of
    :class:`~autograder.service.store.Store`."""

    # -- lessons ------------------------------------------------------------
    def record_run(self, learner, lesson, now=None):
        """``learner`` ran code on ``lesson``'s page (one more run, at ``now``)."""
        now = time.time() if now is None else now
        r = lesson_runs.c
        mine = and_(r.learner == learner, r.lesson == lesson)
        with self.engine.begin() as conn:
            if not conn.execute(update(lesson_runs).where(mine).values(
                    runs=r.runs + 1, last_at=now)).rowcount:
                conn.execute(lesson_runs.insert().values(learner=learner, lesson=lesson, runs=1,
                                                         first_at=now, last_at=now))

    def runs(self):
        """``{learner: {lesson: {"runs", "last_at"}}}`` (``last_at`` epoch seconds)."""
        r = lesson_runs.c
        with self._read() as conn:
            rows = conn.execute(select(r.learner, r.lesson, r.runs, r.last_at)).mappings().all()
        out = {}
        for row in rows:
            out.setdefault(row["learner"], {})[row["lesson"]] = {"runs": row["runs"],
                                                                 "last_at": row["last_at"]}
        return out
