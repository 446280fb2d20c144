"""The databases as a backup holds them (:mod:`autograder.service.commands.backup`): a
SQLite database copied while others write (the grading database, nbgrader's gradebook,
the hub's), how many submissions a copy holds, and PostgreSQL's dump and restore."""
import contextlib
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy import text

from autograder.service.store.engine import make_engine, url_text


def sqlite_copy(src, dest):
    """Copy the SQLite database ``src`` into ``dest`` with SQLite's online backup API
    (consistent while others write; replaces ``dest``'s contents)."""
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(Path(src).resolve().as_uri() + "?mode=ro", uri=True, timeout=60)
    target = sqlite3.connect(dest, timeout=60)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def count(db):
    """How many submissions the SQLite grading database ``db`` holds (int)."""
    with contextlib.closing(sqlite3.connect(Path(db).resolve().as_uri() + "?mode=ro",
                                            uri=True)) as conn:
        try:
            return conn.execute("SELECT count(*) FROM submissions").fetchone()[0]
        except sqlite3.OperationalError:  # a database no service has started on yet
            return 0


def pg_dump(url, dest):
    """``pg_dump`` of the PostgreSQL database at ``url`` into ``dest``; how many
    submissions that snapshot holds (counted in the very snapshot the dump reads)."""
    engine = make_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar()
            count = conn.execute(text("SELECT count(*) FROM submissions")).scalar()
            plain = url_text(url.set(drivername="postgresql"))
            subprocess.run(["pg_dump", "--format=custom", f"--snapshot={snapshot}",
                            f"--file={dest}", f"--dbname={plain}"], check=True)
    finally:
        engine.dispose()
    return count


def pg_restore(url, dump):
    """Put the PostgreSQL database at ``url`` back from the ``pg_dump`` file ``dump`` (its
    tables replaced). Raises :class:`subprocess.CalledProcessError` when pg_restore fails."""
    plain = url_text(url.set(drivername="postgresql"))
    subprocess.run(["pg_restore", "--clean", "--if-exists", "--no-owner",
                    f"--dbname={plain}", str(dump)], check=True)
