"""The submissions database: SQLite on one machine, PostgreSQL for many.

:class:`Store` is the one way into it; nothing outside this package runs SQL on its
tables. By concern: :mod:`.schema` the tables, :mod:`.migrate` their migrations
(Alembic, ``migrations/``), :mod:`.engine` the connection, :mod:`.queue` a submission's
way through the queue (admission caps: :mod:`.caps`; leases), :mod:`.listings` what the
views read, :mod:`.mirroring` the gradebook mirror's state, :mod:`.processes` who is
alive and named locks, :mod:`.lessons` lesson runs, :mod:`.lti` and :mod:`.outbox` the
LMS's tables, :mod:`.withdrawn` dropped learners; :mod:`.rows` the typed row it returns.
"""
# CapReached and Caps live in caps.py (the decisions); importers find them here too
from autograder.service.store.caps import CapReached, Caps  # noqa: F401
from autograder.service.store.engine import (  # noqa: F401
    database_url,
    make_engine,
    owner_only,
    process_name,
    storage_problem,
    url_text,
)
from autograder.service.store.lessons import Lessons
from autograder.service.store.listings import Listings
from autograder.service.store.migrate import upgrade
from autograder.service.store.mirroring import Mirroring
from autograder.service.store.processes import Processes
from autograder.service.store.queue import Queue


class Store(Queue, Listings, Mirroring, Processes, Lessons):
    """The database at ``url`` (a path or URL, see :func:`database_url`), brought to this
    release's schema (:func:`~autograder.service.store.migrate.upgrade`); thread-safe."""

    def __init__(self, url):
        self.url = database_url(url)
        self.engine = make_engine(self.url)
        self.postgres = self.url.get_backend_name() == "postgresql"
        upgrade(self.engine)

    def where(self):
        """The database, for logs (no password)."""
        return self.url.render_as_string(hide_password=True)

    def _read(self):
        return self.engine.connect().execution_options(readonly=True)
