"""The schema of the last release before migrations; a database it made is taken as it is.

A database made by an earlier release still (before leases, before some columns or
tables) is brought to it here, keeping its rows: what the store did at every start
before it had migrations. A new database never runs this (it is made at the newest
revision: :func:`autograder.service.store.migrate.upgrade`).

Revision ID: 0001
Revises:
"""
from alembic import op
from sqlalchemy import inspect

from autograder.service.store.schema import metadata

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# the tables of this revision; their nullable columns added after the tables were
# (a database made before one lacks it: added, old rows read None)
TABLES = ("submissions", "processes", "locks", "lesson_runs", "passback", "lti_people",
          "lti_lineitems", "lti_context", "dropped", "marks")
ADDED = {"submissions": ("started_at", "finished_at", "result", "gradebook", "lease_owner",
                         "lease_until", "replaced_by", "version", "regrade_of"),
         "passback": ("sent_at", "problem", "refused", "lease_owner", "lease_until"),
         "lti_lineitems": ("source",)}


def upgrade():
    conn = op.get_bind()
    _before_leases(conn)
    metadata.create_all(conn, tables=[metadata.tables[t] for t in TABLES])  # those missing
    for name, columns in ADDED.items():
        have = {c["name"] for c in inspect(conn).get_columns(name)}
        for column in columns:
            if column not in have:
                kind = metadata.tables[name].c[column].type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {name} ADD COLUMN {column} {kind}")


def _before_leases(conn):
    """Bring a database made before leases (SQLite only) to this schema, keeping its rows."""
    if "submissions" not in inspect(conn).get_table_names():
        return
    columns = {c["name"] for c in inspect(conn).get_columns("submissions")}
    if "lease_until" in columns:
        return
    # The old table's CHECK on status does not allow 'replaced': copy into a new one.
    submissions = metadata.tables["submissions"]
    conn.exec_driver_sql("ALTER TABLE submissions RENAME TO submissions_v1")
    for index in ("submissions_status", "submissions_learner"):
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")
    metadata.create_all(conn, tables=[submissions])
    keep = ", ".join(sorted(columns & {c.name for c in submissions.c}))
    conn.exec_driver_sql(f"INSERT INTO submissions ({keep}) SELECT {keep} FROM submissions_v1")
    conn.exec_driver_sql("UPDATE submissions SET status = 'queued' WHERE status = 'running'")
    conn.exec_driver_sql("DROP TABLE submissions_v1")


def downgrade():
    """Nothing to undo: a database before migrations had these tables."""
