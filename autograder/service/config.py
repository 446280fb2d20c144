"""Options shared by the API (``python -m autograder.service``) and the workers
(``python -m autograder.service.worker``), and opening the database they share.

Every option has an environment variable, so one set of variables configures
every process of a deployment (``deploy/README.md``).
"""
import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from autograder import defaults

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger("autograder.service")


def env(name, default):
    return os.environ.get(name, default)


def parser(prog, description):
    """An argument parser with the options every process of the service takes."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--db", default=env("GRADER_DB", str(REPO / "grading.db")),
                   help="GRADER_DB: the database: a SQLite path (default ./grading.db) or "
                        "postgresql://user:password@host/dbname (shared by every process; "
                        "nbgrader's gradebook lives there too)")
    p.add_argument("--course", default=env("GRADER_COURSE", str(REPO / "exercises")),
                   help="GRADER_COURSE: nbgrader course folder (its gradebook.db with SQLite, "
                        "and submitted/)")
    p.add_argument("--recorded", choices=defaults.RECORDED_RULES, default=defaults.setting("GRADER_RECORDED"),
                   help=f"GRADER_RECORDED: which graded submission is a learner's grade, in the "
                        f"gradebook, the CSV and the class view: best or latest "
                        f"(default {defaults.RECORDED})")
    return p


def add_grading_options(p, jobs_default):
    p.add_argument("--jobs", type=int, default=int(env("GRADER_JOBS", str(jobs_default))),
                   help="GRADER_JOBS: submissions graded in parallel by this process")
    p.add_argument("--slot-base", type=int, default=int(defaults.setting("GRADER_SLOT_BASE")),
                   help=f"GRADER_SLOT_BASE: first sandbox slot (uid 61000+slot when root); "
                        f"keep it apart from other graders on the machine "
                        f"(default {defaults.SLOT_BASE})")
    p.add_argument("--timeout", type=float, default=float(defaults.setting("GRADER_TIMEOUT")),
                   help=f"GRADER_TIMEOUT: seconds per submission in the sandbox "
                        f"(default {defaults.SERVICE_TIMEOUT_S:g})")
    p.add_argument("--memory-mib", type=int, default=int(defaults.setting("GRADER_MEMORY_MIB")),
                   help=f"GRADER_MEMORY_MIB: address-space limit per submission, in MiB "
                        f"(default {defaults.MEMORY_MIB})")
    p.add_argument("--lease", type=float, default=float(defaults.setting("GRADER_LEASE")),
                   help=f"GRADER_LEASE: seconds a claimed submission stays with its worker "
                        f"without renewal (renewed every third); after that another worker "
                        f"grades it (default {defaults.LEASE_S:g})")


def setup_logging():
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("tornado.access").setLevel(logging.WARNING)  # no line per poll
    warnings.filterwarnings("ignore", module="nbformat")  # learners' notebooks, not ours


def venv_tools_on_path():
    """Put this interpreter's ``bin`` folder first on ``PATH``.

    nbgrader's ``Gradebook`` runs ``alembic`` (a console script of the venv) by name
    when it creates its tables in a new database; the README starts the service as
    ``.venv/bin/python -m autograder.service``, without an activated venv."""
    here = str(Path(sys.executable).parent)  # not resolved: .venv/bin, not the base Python's
    path = os.environ.get("PATH", "")
    if here not in path.split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + path if path else here


def mirror_of(args):
    """The :class:`~autograder.service.gradebook.Mirror` of ``args.course`` and ``args.db``:
    its gradebook is the course's gradebook.db with SQLite, else the service's database."""
    from autograder.service.gradebook import Mirror
    from autograder.service.store import database_url, url_text
    url = database_url(args.db)
    return Mirror(args.course, None if url.get_backend_name() == "sqlite" else url_text(url))


def open_store(args, stopping=None):
    """``(Store, Mirror)`` for ``args.db``; waits (with backoff) while the database is away."""
    venv_tools_on_path()
    from autograder.service.grader import Backoff
    from autograder.service.store import Store, database_url, storage_problem
    url = database_url(args.db)
    mirror = mirror_of(args)
    backoff = Backoff()
    while True:
        try:
            mirror.prepare()
            return Store(url), mirror
        except SQLAlchemyError as exc:
            log.warning("waiting for the database (%s)", storage_problem(exc))
            if stopping is not None and stopping.is_set():
                raise
            time.sleep(backoff.next())


def start_grading(args, store, mirror):
    """Prepare the sandbox and start ``args.jobs`` grading threads; the
    :class:`~autograder.service.grader.GradingThreads`."""
    from autograder import exercises, pipeline, sandbox
    from autograder.service.grader import GradingThreads
    # One zygote for the process's lifetime, with every exercise's imports loaded.
    pipeline.prepare(exercises.names())
    limits = sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib)
    grading = GradingThreads(store, mirror, limits, args.jobs, args.slot_base, args.lease,
                             args.recorded)
    grading.start()
    return grading
