"""The database's schema changes: Alembic migrations (``migrations/versions/``), run by
:func:`upgrade` whenever a process opens the store, as nbgrader and JupyterHub run theirs.

A new database gets the tables of :mod:`~autograder.service.store.schema` at once and is
stamped with the newest revision; a database of an earlier release is brought to it by
the migrations since its revision (one made before migrations, which has no
``alembic_version`` table, from the first: the schema of the release before them). A
change of the tables is a new migration beside the others::

    .venv/bin/alembic -c autograder/service/store/migrations/alembic.ini revision -m "what"

Processes starting at once take turns: SQLite's write lock (every write transaction is
``BEGIN IMMEDIATE``), an advisory lock on PostgreSQL; the one that migrates commits the
whole change or none of it.
"""
import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from autograder.service.store.schema import metadata

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MIGRATE_LOCK = 7_315_002  # pg_advisory_xact_lock key for migrations (any constant)
# The revision's table: not Alembic's default alembic_version, which nbgrader's gradebook
# holds its own revision in when it shares the database (PostgreSQL: GRADER_DB).
VERSION_TABLE = "grading_alembic_version"


def alembic_config(connection=None):
    """Alembic's :class:`~alembic.config.Config` for the migrations, running them on
    ``connection`` (its transaction) when given."""
    config = Config(MIGRATIONS / "alembic.ini")
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@functools.cache
def scripts():
    """The migrations' :class:`~alembic.script.ScriptDirectory` (read once)."""
    return ScriptDirectory.from_config(alembic_config())


def head():
    """The newest revision (str)."""
    return scripts().get_current_head()


def context(conn):
    """Alembic's :class:`~alembic.runtime.migration.MigrationContext` on ``conn``."""
    return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})


def revision(conn):
    """The revision the database of ``conn`` is at, or None (new, or made before
    migrations)."""
    return context(conn).get_current_revision()


def upgrade(engine):
    """Bring the database of ``engine`` to :func:`head` in one transaction (see the module).
    Raises :class:`sqlalchemy.exc.DBAPIError` when it cannot be read or written."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # one process migrates, the others wait
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATE_LOCK})
        at = revision(conn)
        if at == head():
            return
        if at is None and not set(inspect(conn).get_table_names()) & set(metadata.tables):
            metadata.create_all(conn)  # a new database: this release's tables, stamped
            context(conn).stamp(scripts(), "head")
            return
        command.upgrade(alembic_config(conn), "head")
