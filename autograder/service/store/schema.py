"""The service's tables (SQLAlchemy Core), one :class:`~sqlalchemy.MetaData`: what each
holds is said beside it. Their changes are Alembic migrations (``migrations/``), made
by ``alembic revision`` against this module and run at every start (:mod:`.migrate`)."""
from sqlalchemy import Column, Float, Index, Integer, LargeBinary, MetaData, String, Table, Text

# CapReached and Caps live in caps.py (the decisions); importers find them here too
from autograder.service.store.caps import CapReached, Caps, learner_cap, queue_cap  # noqa: F401

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
# Grades back to a learning-management system (LTI 1.3 AGS; autograder/service/lms/outbox.py):
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
