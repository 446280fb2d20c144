"""A submission's way through the queue: admitted under the caps, claimed under a lease,
graded, replaced or regraded.

One row per submission: who sent it (learner, client address), for which
exercise, the notebook as received, its state and, when done, its result
(:meth:`autograder.results.GradingResult.to_record`). States: ``queued`` -> ``running`` -> ``done``, or ``queued`` ->
``replaced`` when the same learner sent a newer notebook for the same exercise
before grading began (newest wins, among the learner's own: an instructor's queued
regrade is never replaced; ``replaced_by`` names the newer one), and
``done`` -> ``regraded`` when an instructor's regrade queued it again
(:meth:`Store.requeue`; ``replaced_by`` names the new grading), or ``done`` ->
``set_aside`` when a regrade made its result stop counting without grading it again.

Queue claims are leases. :meth:`Store.claim` marks a row ``running`` with
``lease_owner`` and ``lease_until``; the worker renews the lease while it
grades (:meth:`Store.renew`). A row whose lease ran out (its worker was killed,
its machine lost) is claimable again. :meth:`Store.finish` writes the result
only if the caller still holds an unexpired lease, in the same statement that
moves the row to ``done``, so ``graded`` (results recorded) is 0 or 1 and a
late result from an expired lease is discarded.

Claims pick the oldest queued row of a learner who holds no running lease: a
learner's submissions are graded one at a time, so one learner never holds two
grading slots while others wait. On PostgreSQL claims take turns under one
transaction-level advisory lock (``pg_advisory_xact_lock``): a claim ranks the
claimable rows and moves the first to ``running`` by an ``UPDATE ... WHERE`` it is
still claimable (claims are milliseconds; serialising them is what makes the
one-slot-per-learner rule exact). On SQLite every write transaction is
``BEGIN IMMEDIATE`` (one writer at a time), with a rollback journal and
``synchronous=FULL``. Times are UNIX seconds from the machine's clock: machines sharing a database need
synchronised clocks (NTP),
to well within the lease.

Every statement goes through SQLAlchemy Core, so the same code runs on both
engines (https://docs.sqlalchemy.org/en/20/dialects/). Database errors are
raised as :class:`sqlalchemy.exc.DBAPIError` (``OperationalError`` when the
database is unreachable or unwritable); callers decide whether to retry.
"""
import json
import secrets
import time

from sqlalchemy import and_, func, or_, select, text, update

from autograder.service.store.caps import learner_cap, queue_cap
from autograder.service.store.rows import WAITING, Status, Submission
from autograder.service.store.schema import locks, passback, submissions

CLAIM_LOCK = 7_315_001  # pg_advisory_xact_lock key for claims (any constant)
FAIR_WINDOW_S = 600.0  # how far back a client's gradings count against its next turn


class Queue:
    """The submissions' way through the queue (see the module); a part of
    :class:`~autograder.service.store.Store`."""

    # -- submitting -------------------------------------------------------
    def admit(self, learner, exercise, notebook_bytes, client, caps, now=None):
        """Queue a submission if ``caps`` allow; return ``(id, replaced_ids, ahead)``.

        Checked and written in one transaction: the learner's rate and stored
        bytes (``caps.learner_bytes``, this notebook included), then the learner's
        still-queued submission for ``exercise`` (replaced by this one), then waiting
        submissions per learner, per client and in all (the store reads the counts,
        :mod:`autograder.service.store.caps` decides). An instructor's regrade (``regrade_of``
        set, :meth:`requeue`) is none of the learner's: it is neither replaced nor counted
        against their rate, quota or waiting cap, nor against the queue's. ``ahead``
        counts queued submissions before this one, regrades included. Raises
        :class:`CapReached` (nothing written) when a cap is reached.
        """
        s = submissions.c
        now = time.time() if now is None else now
        sub_id = secrets.token_urlsafe(24)
        with self.engine.begin() as conn:
            if self.postgres:  # one admission per learner at a time (caps are exact)
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"),
                             {"k": f"learner:{learner}"})
            self._learner_room(conn, learner, len(notebook_bytes), caps, now)
            own = _own(learner)
            replaced = conn.execute(
                update(submissions).where(own, s.exercise == exercise, s.status == Status.QUEUED)
                .values(status=Status.REPLACED, replaced_by=sub_id, finished_at=now)
                .returning(s.id)).scalars().all()
            def queued(cond, limit=True):  # a disabled cap's count is not read
                return conn.execute(select(func.count()).select_from(submissions).where(
                    cond, s.status == Status.QUEUED)).scalar() if limit else 0

            ahead = queued(True)
            cap = queue_cap(caps, learner=queued(own, caps.per_learner),
                            client=queued(s.client == client, caps.per_client),
                            queue=queued(s.regrade_of.is_(None), caps.max_queue))
            if cap:
                raise cap  # rolls back the replacement too
            conn.execute(submissions.insert().values(
                id=sub_id, learner=learner, exercise=exercise, notebook=notebook_bytes,
                client=client, status=Status.QUEUED, submitted_at=now))
        return sub_id, replaced, ahead

    def room(self, learner, size, caps, now=None):
        """Raise :class:`CapReached` if ``learner`` may not store ``size`` more bytes now
        (their rate or their quota), as :meth:`admit` would; read only. The API asks this
        before it parses a request, so that a learner at a cap costs no parse."""
        with self._read() as conn:
            self._learner_room(conn, learner, size, caps, time.time() if now is None else now)

    @staticmethod
    def _learner_room(conn, learner, size, caps, now):
        s = submissions.c
        recent, oldest, used = 0, None, 0  # a disabled cap's count is not read
        own = _own(learner)
        if caps.rate_count:
            recent, oldest = conn.execute(
                select(func.count(), func.min(s.submitted_at)).where(
                    own, s.submitted_at >= now - caps.rate_seconds)).one()
        if caps.learner_bytes:  # length() of a blob reads its header, not its bytes
            used = conn.execute(select(func.coalesce(func.sum(func.length(s.notebook)), 0))
                                .where(own)).scalar()
        cap = learner_cap(caps, size, recent, oldest, used)
        if cap:
            raise cap

    def waiting(self):
        """Submissions queued or running."""
        with self._read() as conn:
            return conn.execute(select(func.count()).select_from(submissions).where(
                submissions.c.status.in_(WAITING))).scalar()

    # -- grading ----------------------------------------------------------
    def claim(self, owner, lease, exclude=()):
        """Lease the next submission to ``owner`` for ``lease`` seconds; the row or None.
        Submissions of the exercises in ``exclude`` are left queued (their hidden tests
        cannot be loaded now).

        The :class:`Submission` (``running``) has the notebook. Expired leases are claimable; a learner
        already being graded is passed over (graded one submission at a time).
        Clients take turns: a submission's turn is its place among its client's
        claimable ones plus the gradings its client started in the last
        :data:`FAIR_WINDOW_S`; the lowest turn goes first, the oldest among
        equals. So a client with many queued submissions delays another
        client's by about one grading, not by all of its own. The client is the
        address under ``make serve`` and the signed-in learner under the hub
        (``app.SubmissionsHandler.client_of``).
        """
        s = submissions.c
        now = time.time()
        with self.engine.begin() as conn:
            if self.postgres:  # one claim at a time (the rows' locks alone do not rank)
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": CLAIM_LOCK})
            claimable = or_(s.status == Status.QUEUED,
                            and_(s.status == Status.RUNNING, s.lease_until < now))
            busy = select(s.learner).where(s.status == Status.RUNNING, s.lease_until >= now)
            other = submissions.alias("other")
            # Each client's gradings started in the window, counted once per client (a
            # subquery per queued row read the client's rows again for every one of them).
            started = select(other.c.client, func.count().label("n")).where(
                other.c.started_at >= now - FAIR_WINDOW_S).group_by(other.c.client).subquery()
            turn = (func.row_number().over(partition_by=s.client, order_by=s.seq)
                    + func.coalesce(started.c.n, 0))
            ranked = select(s.seq, turn.label("turn")).select_from(
                submissions.outerjoin(started, started.c.client == s.client)).where(
                claimable, s.learner.not_in(busy), s.exercise.not_in(list(exclude))).subquery()
            seq = conn.execute(select(ranked.c.seq).order_by(ranked.c.turn, ranked.c.seq)
                               .limit(1)).scalar()
            if seq is None:
                return None
            row = conn.execute(
                update(submissions).where(s.seq == seq, claimable).values(
                    status=Status.RUNNING, started_at=now, attempts=s.attempts + 1,
                    lease_owner=owner, lease_until=now + lease)
                .returning(s.seq, s.id, s.learner, s.exercise, s.notebook, s.submitted_at,
                           s.attempts)).mappings().one_or_none()
        return Submission.of(row, status=Status.RUNNING) if row else None

    def renew(self, sub_id, owner, lease):
        """Extend ``owner``'s lease on ``sub_id``; False if it no longer holds it."""
        now = time.time()
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(_held_by(sub_id, owner, now)).values(
                lease_until=now + lease)).rowcount == 1

    def finish(self, sub_id, owner, result):
        """Record the result; False (discarded) unless ``owner`` holds an unexpired lease."""
        s = submissions.c
        now = time.time()
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(_held_by(sub_id, owner, now)).values(
                status=Status.DONE, result=json.dumps(result), finished_at=now,
                graded=s.graded + 1, lease_until=None,
                version=result.get("version") or None)).rowcount == 1

    def give_back(self, sub_id, owner):
        """Put ``sub_id`` back in the queue, its result discarded, if ``owner`` still holds
        its lease (a grading made by hidden tests the gradebook cannot hold); True if so."""
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(_held_by(sub_id, owner)).values(
                status=Status.QUEUED, lease_owner=None, lease_until=None)).rowcount == 1

    def release_dead(self, host, alive):
        """Requeue rows leased by processes on ``host`` that ``alive(pid)`` says are gone,
        and free the named locks (:meth:`take_lock`) and outbox rows (grades being posted
        to the LMS) those processes held.

        A service restarted after a crash gets its interrupted gradings back at
        once instead of after the lease, and mirrors the gradebook at once instead
        of after the crashed process's 120 s gradebook lock; other hosts' leases
        and locks are left to expire. Returns the number of requeued rows.
        """
        s, c = submissions.c, locks.c

        def dead(owners):  # "host:pid[:slot]" of processes that are gone
            return [o for o in owners if not alive(int(o.split(":")[1]))]

        with self.engine.begin() as conn:
            holders = dead(conn.execute(select(c.owner).distinct().where(
                c.owner.like(f"{host}:%"))).scalars().all())
            if holders:
                conn.execute(update(locks).where(c.owner.in_(holders)).values(until=0))
            posters = dead(conn.execute(select(passback.c.lease_owner).distinct().where(
                passback.c.lease_owner.like(f"{host}:%"))).scalars().all())
            if posters:  # a grade being posted to the LMS: posted again by the next sender
                conn.execute(update(passback).where(passback.c.lease_owner.in_(posters))
                             .values(lease_owner=None, lease_until=None))
            leasers = dead(conn.execute(select(s.lease_owner).distinct().where(
                s.status == Status.RUNNING, s.lease_owner.like(f"{host}:%"))).scalars().all())
            if not leasers:
                return 0
            return conn.execute(update(submissions).where(
                s.status == Status.RUNNING, s.lease_owner.in_(leasers)).values(
                status=Status.QUEUED, lease_owner=None, lease_until=None)).rowcount

    def requeue(self, replacing):
        """Queue graded submissions again: ``replacing`` maps each one's id to the ids of
        the graded submissions its new row replaces (itself included). Each new row has
        the old one's learner, exercise, notebook and submission time, the client
        ``regrade``, and as ``regrade_of`` the old one's id, score, points and version
        (what learners and the instructor read as old -> new). The row graded again is
        kept, with its result, as ``regraded``; the other rows it replaces (and that are
        not graded again themselves) as ``set_aside`` (graded by older tests, not again);
        both with ``replaced_by`` the new row, so only the new results count; a graded row
        not named stays as it is (one graded after the caller read them). The new ids; a
        submission no longer graded is skipped."""
        s = submissions.c
        made = []
        with self.engine.begin() as conn:
            for old, replaced in replacing.items():
                row = conn.execute(select(s.learner, s.exercise, s.notebook, s.submitted_at,
                                          s.result, s.version)
                                   .where(s.id == old, s.status == Status.DONE)).mappings().first()
                if row is None:
                    continue
                new = secrets.token_urlsafe(24)
                conn.execute(update(submissions).where(s.id == old, s.status == Status.DONE)
                             .values(status=Status.REGRADED, replaced_by=new))
                aside = set(replaced) - set(replacing) - {old}  # not graded again: set aside
                conn.execute(update(submissions).where(s.id.in_(list(aside)),
                                                       s.status == Status.DONE)
                             .values(status=Status.SET_ASIDE, replaced_by=new))
                was = dict(_scores(row["result"]), id=old, version=row["version"])
                conn.execute(submissions.insert().values(
                    id=new, client="regrade", status=Status.QUEUED, regrade_of=json.dumps(was),
                    **{k: row[k] for k in ("learner", "exercise", "notebook", "submitted_at")}))
                made.append(new)
        return made


def _held_by(sub_id, owner, now=None):
    """The condition that ``owner`` holds the lease on ``sub_id``: the row is running under
    its name, and (``now`` given, in seconds since the epoch) the lease has not run out. A
    worker whose lease ran out and was taken over matches nothing, so its renewal, result
    or give-back changes nothing: two workers that both think they hold a row are safe."""
    s = submissions.c
    held = and_(s.id == sub_id, s.status == Status.RUNNING, s.lease_owner == owner)
    return held if now is None else and_(held, s.lease_until >= now)


def _own(learner):
    """The condition for ``learner``'s own submissions: not an instructor's regrades of
    theirs (``regrade_of`` set), which count against none of their caps."""
    s = submissions.c
    return and_(s.learner == learner, s.regrade_of.is_(None))


def _scores(result):
    """``{"score", "max_score"}`` (points) of a stored result (JSON text), either shape."""
    data = json.loads(result) if result else {}
    if "checks" in data:
        return {"score": sum(c["score"] for c in data["checks"]),
                "max_score": sum(c["max_score"] for c in data["checks"])}
    return {"score": data.get("score"), "max_score": data.get("max_score")}
