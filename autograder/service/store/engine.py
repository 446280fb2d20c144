"""The database a service process opens: ``GRADER_DB`` as a SQLAlchemy URL, its engine
(SQLite's pragmas and write transactions, PostgreSQL's pool), and what the processes
and their errors are called in the store."""
import os
import socket
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, make_url


def database_url(value):
    """The SQLAlchemy URL for ``GRADER_DB``: a path (SQLite) or a URL (text or a
    :class:`sqlalchemy.engine.URL`, its password kept).

    ``postgresql://`` and ``postgres://`` URLs use psycopg 3
    (``postgresql+psycopg://``); a path becomes ``sqlite:///<absolute path>``.
    """
    # str() of a URL hides its password (as ***): a URL given again keeps its own
    value = url_text(value) if isinstance(value, URL) else str(value)
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

