"""The submissions database: SQLite on one machine, PostgreSQL for many.

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
``synchronous=FULL``. Times are UNIX seconds from the machine's clock: machines sharing a database need synchronised clocks (NTP),
to well within the lease.

Every statement goes through SQLAlchemy Core, so the same code runs on both
engines (https://docs.sqlalchemy.org/en/20/dialects/). Database errors are
raised as :class:`sqlalchemy.exc.DBAPIError` (``OperationalError`` when the
database is unreachable or unwritable); callers decide whether to retry.
"""
import json
import os
import secrets
import socket
import statistics
import time
from pathlib import Path

from sqlalchemy import (Column, Float, Index, Integer, LargeBinary, MetaData, String, Table, Text,
                        and_, create_engine, event, func, inspect, or_, select, text, update)
from sqlalchemy.engine import make_url

# CapReached and Caps live in caps.py (the decisions); importers find them here too
from autograder.service.caps import CapReached, Caps, learner_cap, queue_cap  # noqa: F401
from autograder.service.rows import Submission

metadata = MetaData()
submissions = Table(
    "submissions", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(64), nullable=False, unique=True),
    Column("learner", String(64), nullable=False),
    Column("client", String(64), nullable=False, server_default=""),
    Column("exercise", String(64), nullable=False),
    Column("notebook", LargeBinary, nullable=False),
    Column("status", String(16), nullable=False),  # queued running done replaced
    Column("submitted_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("graded", Integer, nullable=False, server_default="0"),
    Column("result", Text),
    Column("gradebook", String(16)),
    Column("lease_owner", String(128)),
    Column("lease_until", Float),
    Column("replaced_by", String(64)),
    # Which version of the exercise's grading made the result (results.GradingResult.version)
    # and, for a regrade, what it regrades: {"id", "score", "max_score", "version"} (JSON).
    Column("version", String(64)),
    Column("regrade_of", Text),
    Index("submissions_status", "status", "seq"),
    Index("submissions_learner", "learner", "submitted_at"),
    Index("submissions_client", "client", "status"),
)
# Who is alive: each worker process and API process writes its row now and
# then (``slots``: grading threads; ``problem``: what stops it, in words).
processes = Table(
    "processes", metadata,
    Column("name", String(128), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("slots", Integer, nullable=False, server_default="0"),
    Column("seen_at", Float, nullable=False),
    Column("problem", Text),
)
# Named leases for jobs only one process should do at a time (gradebook sync).
locks = Table(
    "locks", metadata,
    Column("name", String(64), primary_key=True),
    Column("owner", String(128), nullable=False),
    Column("until", Float, nullable=False),
)
# Which lessons each signed-in learner ran code on in the page (course-run.js).
lesson_runs = Table(
    "lesson_runs", metadata,
    Column("learner", String(64), primary_key=True),
    Column("lesson", String(64), primary_key=True),
    Column("runs", Integer, nullable=False),
    Column("first_at", Float, nullable=False),
    Column("last_at", Float, nullable=False),
)
# Grades back to a learning-management system (LTI 1.3 AGS; autograder/service/outbox.py):
# one row per learner and exercise, the recorded grade the LMS should hold (``version``
# counts its changes) and the version it is known to hold (``sent_version``).
passback = Table(
    "passback", metadata,
    Column("learner", String(64), primary_key=True),
    Column("exercise", String(64), primary_key=True),
    Column("score", Float, nullable=False),
    Column("max_score", Float, nullable=False),
    Column("submission", String(64), nullable=False),
    Column("version", Integer, nullable=False),
    Column("changed_at", Float, nullable=False),  # the score's timestamp for the LMS
    Column("sent_version", Integer, nullable=False, server_default="0"),
    Column("sent_at", Float),
    Column("tries", Integer, nullable=False, server_default="0"),
    Column("next_at", Float, nullable=False, server_default="0"),
    Column("problem", Text),
    Column("refused", Integer),  # 1: the LMS refused it for good (a 4xx): not retried
    Column("lease_owner", String(128)),
    Column("lease_until", Float),
)
# Who each learner is in the LMS: the hub user name made from (issuer, sub) at their
# first launch, or a roster member (NRPS) who never launched (``launched`` 0).
lti_people = Table(
    "lti_people", metadata,
    Column("learner", String(64), primary_key=True),
    Column("issuer", String(255), nullable=False),
    Column("sub", String(255), nullable=False),
    Column("name", Text),
    Column("roles", Text),
    Column("launched", Integer, nullable=False, server_default="0"),
    Column("seen_at", Float, nullable=False),
)
# The LMS's line item of each exercise (its URL; ``source`` "lms" for the column an
# instructor made in the LMS, from a launch's lineitem claim, else the tool's own), and
# the course's pinned LMS context and AGS/NRPS endpoints.
lti_lineitems = Table(
    "lti_lineitems", metadata,
    Column("exercise", String(64), primary_key=True),
    Column("url", Text, nullable=False),
    Column("source", String(16)),
)
lti_context = Table(
    "lti_context", metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)
# Learners dropped from the course (``withdrawn.py``): ``kind`` "withdrawn" (grades kept,
# shown as withdrawn) or "removed" (her grades deleted); either refuses her from then on.
dropped = Table(
    "dropped", metadata,
    Column("learner", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("at", Float, nullable=False),
)
# Course-wide facts every process reads alike: which deadlines and late policy the
# gradebook's late penalties were written under (``gradebook_deadlines``).
marks = Table(
    "marks", metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Text),
)
WAITING = ("queued", "running")
CLAIM_LOCK = 7_315_001  # pg_advisory_xact_lock key for claims (any constant)


FAIR_WINDOW_S = 600.0  # how far back a client's gradings count against its next turn


def database_url(value):
    """The SQLAlchemy URL for ``GRADER_DB``: a path (SQLite) or a URL.

    ``postgresql://`` and ``postgres://`` URLs use psycopg 3
    (``postgresql+psycopg://``); a path becomes ``sqlite:///<absolute path>``.
    """
    value = str(value)
    if "://" not in value:
        return make_url(f"sqlite:///{Path(value).resolve()}")
    url = make_url(value.replace("postgres://", "postgresql://", 1)
                   if value.startswith("postgres://") else value)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url


def url_text(url):
    """``url`` as a string with its password (for nbgrader's Gradebook)."""
    return url.render_as_string(hide_password=False)


def owner_only(path):
    """Make the database file ``path`` readable by its owner only (0600), whatever the
    umask (its folder 0700 when made here): created empty when missing (SQLite takes
    an empty file as an empty database, and gives its journals the file's mode),
    narrowed when this user owns it. Learners' work and grades: no other user reads
    them. Raises OSError when the file cannot be made."""
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a folder made for it: 0700
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        info = path.stat()
        if info.st_uid == os.geteuid() and info.st_mode & 0o077:
            try:
                os.chmod(path, 0o600)
            except OSError:  # a read-only disk: opening the database says so in its words
                pass


def make_engine(url):
    """An engine for ``url`` (see :func:`database_url`) with this module's settings."""
    if url.get_backend_name() == "sqlite":
        owner_only(url.database)  # learners' notebooks and grades
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn, _):
            dbapi_conn.isolation_level = None  # transactions are begun below
            # A rollback journal, not WAL: WAL's index is a memory-mapped file, and
            # a write the filesystem refuses there (a read-only or failing disk,
            # `chattr +i`) kills the process with SIGBUS instead of raising.
            for pragma in ("journal_mode=DELETE", "synchronous=FULL", "busy_timeout=60000"):
                dbapi_conn.execute(f"PRAGMA {pragma}")

        @event.listens_for(engine, "begin")
        def _begin(conn):
            # Writers take the write lock up front, so a claim's read and write
            # are one step.
            readonly = conn.get_execution_options().get("readonly")
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=20,
                         connect_args={"connect_timeout": 5})


def process_name():
    """``host:pid``: this process in the store (a lease owner is ``host:pid:slot``)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def storage_problem(exc):
    """A database error in plain words (the driver's first line)."""
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"the database cannot be used: {detail[0] if detail else type(exc).__name__}"


class Store:
    """The database at ``url`` (a path or URL, see :func:`database_url`); thread-safe."""

    def __init__(self, url):
        self.url = database_url(url)
        self.engine = make_engine(self.url)
        self.postgres = self.url.get_backend_name() == "postgresql"
        with self.engine.begin() as conn:
            _migrate(conn)
            metadata.create_all(conn)
            _add_columns(conn)

    def where(self):
        """The database, for logs (no password)."""
        return self.url.render_as_string(hide_password=True)

    def _read(self):
        return self.engine.connect().execution_options(readonly=True)

    # -- submitting -------------------------------------------------------
    def admit(self, learner, exercise, notebook_bytes, client, caps, now=None):
        """Queue a submission if ``caps`` allow; return ``(id, replaced_ids, ahead)``.

        Checked and written in one transaction: the learner's rate and stored
        bytes (``caps.learner_bytes``, this notebook included), then the learner's
        still-queued submission for ``exercise`` (replaced by this one), then waiting
        submissions per learner, per client and in all (the store reads the counts,
        :mod:`autograder.service.caps` decides). An instructor's regrade (``regrade_of``
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
                update(submissions).where(own, s.exercise == exercise, s.status == "queued")
                .values(status="replaced", replaced_by=sub_id, finished_at=now)
                .returning(s.id)).scalars().all()
            def queued(cond, limit=True):  # a disabled cap's count is not read
                return conn.execute(select(func.count()).select_from(submissions).where(
                    cond, s.status == "queued")).scalar() if limit else 0

            ahead = queued(True)
            cap = queue_cap(caps, learner=queued(own, caps.per_learner),
                            client=queued(s.client == client, caps.per_client),
                            queue=queued(s.regrade_of.is_(None), caps.max_queue))
            if cap:
                raise cap  # rolls back the replacement too
            conn.execute(submissions.insert().values(
                id=sub_id, learner=learner, exercise=exercise, notebook=notebook_bytes,
                client=client, status="queued", submitted_at=now))
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
            if row["status"] == "queued":
                position = conn.execute(
                    select(func.count()).select_from(submissions).where(
                        s.status == "queued", s.seq < row["seq"])).scalar() + 1
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
                s.status == "done", s.finished_at >= now - window).order_by(
                s.seq.desc()).limit(50)).scalars().all()
            slots = conn.execute(select(func.coalesce(func.sum(p.slots), 0)).where(
                p.role == "worker", p.seen_at >= now - 30)).scalar()
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
            claimable = or_(s.status == "queued",
                            and_(s.status == "running", s.lease_until < now))
            busy = select(s.learner).where(s.status == "running", s.lease_until >= now)
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
                    status="running", started_at=now, attempts=s.attempts + 1,
                    lease_owner=owner, lease_until=now + lease)
                .returning(s.seq, s.id, s.learner, s.exercise, s.notebook, s.submitted_at,
                           s.attempts)).mappings().one_or_none()
        return Submission.of(row, status="running") if row else None

    def renew(self, sub_id, owner, lease):
        """Extend ``owner``'s lease on ``sub_id``; False if it no longer holds it."""
        s = submissions.c
        now = time.time()
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(
                s.id == sub_id, s.status == "running", s.lease_owner == owner,
                s.lease_until >= now).values(lease_until=now + lease)).rowcount == 1

    def finish(self, sub_id, owner, result):
        """Record the result; False (discarded) unless ``owner`` holds an unexpired lease."""
        s = submissions.c
        now = time.time()
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(
                s.id == sub_id, s.status == "running", s.lease_owner == owner,
                s.lease_until >= now).values(
                status="done", result=json.dumps(result), finished_at=now,
                graded=s.graded + 1, lease_until=None,
                version=result.get("version") or None)).rowcount == 1

    def give_back(self, sub_id, owner):
        """Put ``sub_id`` back in the queue, its result discarded, if ``owner`` still holds
        its lease (a grading made by hidden tests the gradebook cannot hold); True if so."""
        s = submissions.c
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(
                s.id == sub_id, s.status == "running", s.lease_owner == owner).values(
                status="queued", lease_owner=None, lease_until=None)).rowcount == 1

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
                s.status == "running", s.lease_owner.like(f"{host}:%"))).scalars().all())
            if not leasers:
                return 0
            return conn.execute(update(submissions).where(
                s.status == "running", s.lease_owner.in_(leasers)).values(
                status="queued", lease_owner=None, lease_until=None)).rowcount

    # -- who is alive -------------------------------------------------------
    def heartbeat(self, name, role, slots=0, problem=None):
        """Record that process ``name`` is alive (a write: it fails when the store does)."""
        p = processes.c
        values = dict(role=role, slots=slots, seen_at=time.time(), problem=problem)
        with self.engine.begin() as conn:
            if not conn.execute(update(processes).where(p.name == name).values(**values)).rowcount:
                conn.execute(processes.insert().values(name=name, **values))

    def workers(self, within=30.0):
        """``[(name, slots, problem)]`` of worker processes seen in the last ``within`` s."""
        p = processes.c
        with self._read() as conn:
            return [tuple(r) for r in conn.execute(
                select(p.name, p.slots, p.problem).where(
                    p.role == "worker", p.seen_at >= time.time() - within))]

    def forget(self, name):
        with self.engine.begin() as conn:
            conn.execute(processes.delete().where(processes.c.name == name))

    def take_lock(self, name, owner, seconds):
        """Hold the named lock for ``seconds`` (taken or renewed); False if another holds it."""
        c = locks.c
        now = time.time()
        with self.engine.begin() as conn:
            if conn.execute(update(locks).where(
                    c.name == name, or_(c.owner == owner, c.until < now)).values(
                    owner=owner, until=now + seconds)).rowcount:
                return True
            if conn.execute(select(c.owner).where(c.name == name)).first() is not None:
                return False
            conn.execute(locks.insert().values(name=name, owner=owner, until=now + seconds))
            return True

    # -- gradebook mirroring ------------------------------------------------
    def unsynced(self):
        """Done submissions not yet mirrored into the gradebook (:class:`Submission`
        without its notebook and result: the mirror reads those of the one it writes),
        oldest first."""
        s = submissions.c
        with self._read() as conn:
            rows = conn.execute(select(s.seq, s.id, s.learner, s.exercise, s.status,
                                       s.submitted_at).where(
                s.status == "done", s.gradebook.is_(None)).order_by(s.seq)).mappings().all()
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
                s.learner == learner, s.exercise == exercise, s.status == "done")
                .order_by(s.seq)).mappings().all()
        return [Submission.of(r) for r in rows]

    def learners(self, exercise):
        """Every learner with a graded submission of ``exercise``, sorted."""
        s = submissions.c
        with self._read() as conn:
            return sorted(conn.execute(select(s.learner).distinct().where(
                s.exercise == exercise, s.status == "done")).scalars())

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
                                   .where(s.id == old, s.status == "done")).mappings().first()
                if row is None:
                    continue
                new = secrets.token_urlsafe(24)
                conn.execute(update(submissions).where(s.id == old, s.status == "done")
                             .values(status="regraded", replaced_by=new))
                aside = set(replaced) - set(replacing) - {old}  # not graded again: set aside
                conn.execute(update(submissions).where(s.id.in_(list(aside)),
                                                       s.status == "done")
                             .values(status="set_aside", replaced_by=new))
                was = dict(_scores(row["result"]), id=old, version=row["version"])
                conn.execute(submissions.insert().values(
                    id=new, client="regrade", status="queued", regrade_of=json.dumps(was),
                    **{k: row[k] for k in ("learner", "exercise", "notebook", "submitted_at")}))
                made.append(new)
        return made

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
                                .where(s.status == "done", or_(*older))
                                .group_by(s.exercise)).all()
        return {ex: (n, learners) for ex, n, learners in rows}

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

    def graded_pairs(self):
        """Every ``(learner, exercise)`` with a graded submission, sorted."""
        s = submissions.c
        with self._read() as conn:
            return sorted(tuple(r) for r in conn.execute(
                select(s.learner, s.exercise).distinct().where(s.status == "done")))

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

    def unsync(self, sub_ids):
        """The graded submissions ``sub_ids`` are to be written into the gradebook again
        (their pairs are unsynced: :meth:`unsynced`)."""
        s = submissions.c
        if sub_ids:
            with self.engine.begin() as conn:
                conn.execute(update(submissions).where(s.id.in_(list(sub_ids)),
                                                       s.status == "done")
                             .values(gradebook=None))

    def mark_recorded(self, learner, exercise, sub_id, weighed):
        """``sub_id`` is in the gradebook as ``learner``'s grade for ``exercise``; the
        other graded submissions it was chosen from (the ids ``weighed``) and every regraded
        one are ``superseded``. One graded since that choice keeps its state: the mirror
        has not weighed it yet."""
        s = submissions.c
        mine = and_(s.learner == learner, s.exercise == exercise,
                    or_(and_(s.status == "done", s.id.in_(list(weighed))),
                        s.status.in_(("regraded", "set_aside"))))
        with self.engine.begin() as conn:
            conn.execute(update(submissions).where(mine, s.id != sub_id)
                         .values(gradebook="superseded"))
            conn.execute(update(submissions).where(s.id == sub_id).values(gradebook="recorded"))


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


def _add_columns(conn):
    """Add the columns a database made before them lacks (nullable: old rows read None)."""
    for table in (submissions, passback, lti_lineitems):
        have = {c["name"] for c in inspect(conn).get_columns(table.name)}
        for column in table.c:
            if column.name not in have and column.nullable:
                kind = column.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")


def _migrate(conn):
    """Bring a database made before leases (SQLite only) to this schema, keeping its rows."""
    names = inspect(conn).get_table_names()
    if "submissions" not in names:
        return
    columns = {c["name"] for c in inspect(conn).get_columns("submissions")}
    if "lease_until" in columns:
        return
    # The old table's CHECK on status does not allow 'replaced': copy into a new one.
    conn.exec_driver_sql("ALTER TABLE submissions RENAME TO submissions_v1")
    for index in ("submissions_status", "submissions_learner"):
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")
    metadata.create_all(conn, tables=[submissions])
    keep = ", ".join(sorted(columns & {c.name for c in submissions.c}))
    conn.exec_driver_sql(f"INSERT INTO submissions ({keep}) SELECT {keep} FROM submissions_v1")
    conn.exec_driver_sql("UPDATE submissions SET status = 'queued' WHERE status = 'running'")
    conn.exec_driver_sql("DROP TABLE submissions_v1")
