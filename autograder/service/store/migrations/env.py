"""Alembic's environment: the migrations run on the connection
:func:`autograder.service.store.migrate.upgrade` hands over, or, for the ``alembic``
command (``alembic revision --autogenerate``), on ``GRADER_DB``'s database."""
import os

from alembic import context

from autograder.service.store.engine import database_url, make_engine
from autograder.service.store.migrate import VERSION_TABLE
from autograder.service.store.schema import metadata


def ours(name, kind, parent):
    """Whether autogenerate compares ``name``: the service's tables only (nbgrader's
    gradebook may share the database)."""
    return kind != "table" or name in metadata.tables


def run(connection):
    # render_as_batch: SQLite alters a table by copying it (ALTER TABLE is limited there)
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                      version_table=VERSION_TABLE, include_name=ours)
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    run(connection)
else:
    engine = make_engine(database_url(os.environ.get("GRADER_DB", "grading.db")))
    with engine.connect() as conn:
        run(conn)
