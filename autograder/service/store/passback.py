"""The ``passback`` table: per learner and exercise, the recorded grade the LMS should
hold, the version it is known to hold, and the lease of the sender posting it (what the
outbox does with them: :mod:`autograder.service.lms.outbox`)."""
import time

from sqlalchemy import and_, or_, select, update

from autograder.service.store.schema import lti_people, passback

DUE_AGAIN = dict(sent_version=0, tries=0, next_at=0, problem=None, refused=None)


def write_plan(store, want, now):
    """Bring the rows to ``want`` (``{(learner, exercise): (score, max_score, submission
    id)}``): a new grade is version 1, a changed one bumps ``version`` and stamps
    ``changed_at`` with ``now`` (its backoff and refusal cleared), the same grade from
    another submission changes only ``submission``. The number of grades changed."""
    p = passback.c
    changed = 0
    with store.engine.begin() as conn:
        have = {(r.learner, r.exercise): r for r in conn.execute(
            select(p.learner, p.exercise, p.score, p.max_score, p.submission))}
        for (learner, exercise), (points, most, sub_id) in want.items():
            old = have.get((learner, exercise))
            if old is None:
                conn.execute(passback.insert().values(
                    learner=learner, exercise=exercise, score=points, max_score=most,
                    submission=sub_id, version=1, changed_at=now))
            elif (old.score, old.max_score) != (points, most):
                conn.execute(update(passback).where(
                    p.learner == learner, p.exercise == exercise).values(
                    score=points, max_score=most, submission=sub_id, version=p.version + 1,
                    changed_at=now, tries=0, next_at=0, problem=None, refused=None))
            else:
                if old.submission != sub_id:  # same grade from another submission: no post
                    conn.execute(update(passback).where(
                        p.learner == learner, p.exercise == exercise).values(submission=sub_id))
                continue
            changed += 1
    return changed


def claim(store, owner, lease, now=None):
    """Lease one row due for posting to ``owner`` for ``lease`` seconds: ``dict(learner,
    exercise, score, max_score, version, changed_at, tries, sub)`` or None. Due: a version
    the LMS does not hold, its backoff over, no live lease, and the learner known to the
    LMS (``sub``: their LMS id)."""
    now = time.time() if now is None else now
    p, who = passback.c, lti_people.c
    free = or_(p.lease_until.is_(None), p.lease_until < now)
    with store.engine.begin() as conn:
        row = conn.execute(
            select(p.learner, p.exercise, p.score, p.max_score, p.version, p.changed_at,
                   p.tries, who.sub).join(lti_people, who.learner == p.learner)
            .where(p.version > p.sent_version, p.next_at <= now, free,
                   or_(p.refused.is_(None), p.refused == 0))
            .order_by(p.next_at, p.changed_at).limit(1)).mappings().first()
        if row is None:
            return None
        taken = conn.execute(update(passback).where(
            p.learner == row["learner"], p.exercise == row["exercise"], free).values(
            lease_owner=owner, lease_until=now + lease)).rowcount
    return dict(row) if taken else None


def _mine(row, owner):
    p = passback.c
    return and_(p.learner == row["learner"], p.exercise == row["exercise"],
                p.lease_owner == owner)


def sent(store, row, owner, now=None):
    """The LMS holds ``row``'s version: mark it (and free the lease)."""
    p = passback.c
    with store.engine.begin() as conn:
        conn.execute(update(passback).where(_mine(row, owner)).values(
            lease_owner=None, lease_until=None))
        conn.execute(update(passback).where(
            p.learner == row["learner"], p.exercise == row["exercise"],
            p.sent_version < row["version"]).values(
            sent_version=row["version"], sent_at=time.time() if now is None else now,
            tries=0, problem=None))


def failed(store, row, owner, words, next_at):
    """Posting ``row`` failed for ``words``: kept, tried again from ``next_at`` (epoch s)."""
    with store.engine.begin() as conn:
        conn.execute(update(passback).where(_mine(row, owner)).values(
            lease_owner=None, lease_until=None, tries=row["tries"] + 1,
            next_at=next_at, problem=words))


def refused(store, row, owner, words):
    """The LMS refused ``row`` for good (a permanent 4xx, its own column gone): kept with
    ``words`` and not retried until its grade changes or an instructor re-sends it
    (:func:`resend_all`)."""
    with store.engine.begin() as conn:
        conn.execute(update(passback).where(_mine(row, owner)).values(
            lease_owner=None, lease_until=None, tries=row["tries"] + 1, next_at=0,
            problem=words, refused=1))


def resend_all(store):
    """The instructor's re-send: every row is posted again (same score and timestamp);
    the number of rows."""
    with store.engine.begin() as conn:
        return conn.execute(update(passback).values(**DUE_AGAIN)).rowcount


def rows(store):
    """Every row as a mapping: ``learner``, ``exercise``, ``score`` (points, the planned
    grade), ``version``, ``sent_version``, ``problem``, ``next_at``, ``refused`` and the
    learner's LMS ``sub`` (None when they are no LMS member)."""
    p, who = passback.c, lti_people.c
    with store._read() as conn:
        return conn.execute(select(p.learner, p.exercise, p.score, p.version, p.sent_version,
                                   p.problem,
                                   p.next_at, p.refused, who.sub).outerjoin(
            lti_people, who.learner == p.learner)).mappings().all()
