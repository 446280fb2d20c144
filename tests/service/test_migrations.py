"""The service's database is migrated by Alembic at every start: a database made by the
previous release (``previous_release/``: dumps of one its store made, a row in every
table, on SQLite and on PostgreSQL) is brought to this release's tables with every row
kept, and a new database is made at the newest revision."""
import os
import sqlite3
import sys
from pathlib import Path

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from nbgrader.api import Gradebook
from sqlalchemy import MetaData, select

from autograder.service.store import Caps, Store, database_url, make_engine, url_text
from autograder.service.store.migrate import VERSION_TABLE, context, head, revision
from autograder.service.store.rows import Status
from autograder.service.store.schema import metadata

PREVIOUS = Path(__file__).resolve().parent / "previous_release"
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def previous_release(engine, request, tmp_path):
    """A database as the previous release left it: a path (SQLite) or a URL."""
    dump = (PREVIOUS / f"{engine}.sql").read_text(encoding="utf-8")
    if engine == "sqlite":
        with sqlite3.connect(tmp_path / "grading.db") as conn:
            conn.executescript(dump)
        return tmp_path / "grading.db"
    url = request.getfixturevalue("pg_url")()
    with psycopg.connect(url, autocommit=True) as conn:  # psql's \restrict lines left out
        conn.execute("\n".join(line for line in dump.splitlines() if not line.startswith("\\")))
    return url


def rows(engine):
    """``{table: sorted rows}`` of every table the database of ``engine`` holds but
    Alembic's own."""
    found = MetaData()
    with engine.connect() as conn:
        found.reflect(conn)
        return {name: sorted(map(tuple, conn.execute(select(table)).all()), key=repr)
                for name, table in found.tables.items() if name != VERSION_TABLE}


def differences(store):
    """What the database's tables lack or hold beyond this release's (Alembic's
    comparison; [] when they agree)."""
    with store.engine.connect() as conn:
        return compare_metadata(context(conn), metadata)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_database_of_the_previous_release_is_upgraded_keeping_every_row(engine, request,
                                                                          tmp_path):
    db = previous_release(engine, request, tmp_path)
    plain = make_engine(database_url(db))  # opened as it is, not migrated
    try:
        before = rows(plain)
    finally:
        plain.dispose()
    store = Store(db)
    try:
        after = rows(store.engine)
        with store.engine.connect() as conn:
            at = revision(conn)
        drift = differences(store)
        ada = {r.status: r for r in store.submissions("ada")}
        new = store.admit("cy", "update_with_donate", b"{}", "10.0.0.3", Caps(rate_count=0))[0]
    finally:
        store.engine.dispose()
    assert at == head() and drift == []
    assert after == before and all(before.values())  # a row in every table, each kept
    assert set(ada) == {Status.REGRADED, Status.QUEUED}
    assert ada[Status.REGRADED].result.score == 3.0 and new


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_database_is_made_at_the_newest_revision(engine, request, tmp_path):
    db = tmp_path / "grading.db" if engine == "sqlite" else request.getfixturevalue("pg_url")()
    store = Store(db)
    try:
        with store.engine.connect() as conn:
            at = revision(conn)
        drift = differences(store)
        Store(db).engine.dispose()  # a second start finds it current
        with store.engine.connect() as conn:
            again = revision(conn)
    finally:
        store.engine.dispose()
    assert at == again == head() and drift == []


@pytest.mark.postgres
def test_a_database_nbgraders_gradebook_shares_keeps_each_ones_revision(pg_url, monkeypatch):
    """With PostgreSQL nbgrader's gradebook lives in the service's database (on SQLite it
    is a file of its own), and keeps its own Alembic revision there: the service's is in
    a table of its own."""
    db = pg_url()
    # nbgrader runs the alembic command of the environment to make its database
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    with Gradebook(url_text(database_url(db))):  # nbgrader's tables and revision first
        pass
    nbgrader_at = _nbgrader_revision(db)
    for _ in range(2):  # made, then opened again
        store = Store(db)
        try:
            with store.engine.connect() as conn:
                at = revision(conn)
        finally:
            store.engine.dispose()
        assert at == head()
    assert nbgrader_at and _nbgrader_revision(db) == nbgrader_at


def _nbgrader_revision(db):
    engine = make_engine(database_url(db))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
