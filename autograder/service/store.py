"""The submissions database (SQLite, WAL, committed before acknowledging).

One row per submission: who sent it, for which exercise, the notebook as
received, its state (``queued`` -> ``running`` -> ``done``) and, when done, the
results.json. ``graded`` counts the results recorded for a row; the only write
of a result is guarded by ``status = 'running'``, so it is 0 or 1. A grading
interrupted by a crash left its row ``running``: :meth:`Store.requeue_running`
puts it back in the queue at start-up, so it is graded again from scratch and
its result is still recorded once. ``gradebook`` is NULL until the result has
been mirrored into nbgrader's gradebook (see :mod:`autograder.service.gradebook`).

Each thread gets its own connection; writes that must not interleave (claiming
the next queued row) run in ``BEGIN IMMEDIATE`` transactions.
"""
import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    learner      TEXT NOT NULL,
    exercise     TEXT NOT NULL,
    notebook     BLOB NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')),
    submitted_at REAL NOT NULL,
    started_at   REAL,
    finished_at  REAL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    graded       INTEGER NOT NULL DEFAULT 0,
    result       TEXT,
    gradebook    TEXT
);
CREATE INDEX IF NOT EXISTS submissions_status ON submissions (status, seq);
CREATE INDEX IF NOT EXISTS submissions_learner ON submissions (learner, submitted_at);
"""


class Store:
    """The database at ``path``; safe to use from several threads."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._db().executescript(SCHEMA)

    def _db(self):
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before we answer
            db.execute("PRAGMA busy_timeout=60000")
            self._local.db = db
        return db

    class _Tx:
        def __init__(self, db, mode):
            self.db, self.mode = db, mode

        def __enter__(self):
            self.db.execute(f"BEGIN {self.mode}")
            return self.db

        def __exit__(self, kind, *_):
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")

    def _tx(self, mode="IMMEDIATE"):
        return self._Tx(self._db(), mode)

    # -- submitting -------------------------------------------------------
    def add(self, learner, exercise, notebook_bytes, now=None):
        """Insert a queued submission; return ``(id, submitted_at)`` once committed."""
        sub_id = secrets.token_urlsafe(24)
        now = time.time() if now is None else now
        with self._tx() as db:
            db.execute("INSERT INTO submissions (id, learner, exercise, notebook, status, "
                       "submitted_at) VALUES (?, ?, ?, ?, 'queued', ?)",
                       (sub_id, learner, exercise, notebook_bytes, now))
        return sub_id, now

    def count_since(self, learner, since):
        """Submissions ``learner`` made at or after time ``since``, and the oldest of them."""
        row = self._db().execute("SELECT COUNT(*), MIN(submitted_at) FROM submissions "
                                 "WHERE learner = ? AND submitted_at >= ?",
                                 (learner, since)).fetchone()
        return row[0], row[1]

    def queued(self):
        return self._db().execute(
            "SELECT COUNT(*) FROM submissions WHERE status != 'done'").fetchone()[0]

    # -- reading ----------------------------------------------------------
    def get(self, sub_id):
        """The row for ``sub_id`` as a dict (without the notebook), or None."""
        row = self._db().execute(
            "SELECT seq, id, learner, exercise, status, submitted_at, started_at, finished_at, "
            "attempts, graded, result, gradebook FROM submissions WHERE id = ?",
            (sub_id,)).fetchone()
        if row is None:
            return None
        data = dict(row)
        data["result"] = json.loads(data["result"]) if data["result"] else None
        if data["status"] == "queued":
            data["queue_position"] = self._db().execute(
                "SELECT COUNT(*) FROM submissions WHERE status = 'queued' AND seq < ?",
                (row["seq"],)).fetchone()[0] + 1
        return data

    # -- grading ----------------------------------------------------------
    def requeue_running(self):
        """Put gradings interrupted by a crash back in the queue; return how many."""
        with self._tx() as db:
            return db.execute("UPDATE submissions SET status = 'queued', started_at = NULL "
                              "WHERE status = 'running'").rowcount

    def claim(self):
        """Mark the oldest queued submission ``running`` and return it (with notebook)."""
        with self._tx() as db:
            row = db.execute("SELECT seq, id, learner, exercise, notebook, submitted_at "
                             "FROM submissions WHERE status = 'queued' ORDER BY seq "
                             "LIMIT 1").fetchone()
            if row is None:
                return None
            db.execute("UPDATE submissions SET status = 'running', started_at = ?, "
                       "attempts = attempts + 1 WHERE seq = ?", (time.time(), row["seq"]))
        return dict(row)

    def finish(self, sub_id, result):
        """Record the result of a running submission; False if it was not running."""
        with self._tx() as db:
            return db.execute("UPDATE submissions SET status = 'done', result = ?, "
                              "finished_at = ?, graded = graded + 1 "
                              "WHERE id = ? AND status = 'running'",
                              (json.dumps(result), time.time(), sub_id)).rowcount == 1

    # -- gradebook mirroring ------------------------------------------------
    def unsynced(self):
        """Done submissions not yet mirrored into the gradebook, oldest first."""
        rows = self._db().execute(
            "SELECT seq, id, learner, exercise, notebook, submitted_at, result "
            "FROM submissions WHERE status = 'done' AND gradebook IS NULL ORDER BY seq")
        return [dict(r, result=json.loads(r["result"])) for r in rows]

    def newest_recorded(self, learner, exercise):
        """``seq`` of the newest submission already written to the gradebook, or 0."""
        return self._db().execute(
            "SELECT COALESCE(MAX(seq), 0) FROM submissions WHERE learner = ? AND "
            "exercise = ? AND gradebook = 'recorded'", (learner, exercise)).fetchone()[0]

    def mark_gradebook(self, sub_id, state):
        """``state``: ``recorded`` or ``superseded`` (a newer submission is there)."""
        with self._tx() as db:
            db.execute("UPDATE submissions SET gradebook = ? WHERE id = ?", (state, sub_id))
