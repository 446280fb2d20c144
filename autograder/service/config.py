"""Options shared by the API (``python -m autograder.service``) and the workers
(``python -m autograder.service.worker``), and opening the database they share.

Every option has an environment variable, so one set of variables configures
every process of a deployment (``deploy/README.md``).
"""
import argparse
import difflib
import gc
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from autograder import defaults, options

log = logging.getLogger("autograder.service")


def parser(prog, description, names=defaults.STORE):
    """An argument parser with the options of settings ``names``: by default what every
    process of the service takes (:data:`~autograder.defaults.STORE`, the instructor's
    commands); the service and a worker name theirs (``defaults.SERVICE``, ``WORKER``)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    options.add(p, *names)
    return p


def known_name(p, kind, name, known, where=""):
    """Stop the command (``p.error``: usage, exit status 2) before it touches anything when
    ``name`` is not one of ``known`` (an iterable of str): an instructor's typo, wrong case
    or stray space must not make a phantom exercise or learner. The message names the
    closest known names (:func:`difflib.get_close_matches`, case aside) and every known
    one; ``kind`` is what a name names ("exercise", "learner"), ``where`` says in words
    where the known ones come from (and how to add one)."""
    known = sorted(set(known))
    if name in known:
        return name
    folded = {k.lower(): k for k in known}
    close = [folded[m] for m in difflib.get_close_matches(name.strip().lower(), folded, n=3)]
    said = f"unknown {kind} {name!r}" + (f"; did you mean {' or '.join(map(repr, close))}?"
                                         if close else ".")
    listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
    p.error(f"{said} The known {kind}s{where}: {listed or 'none yet'}. Nothing was changed.")


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
    """The :class:`~autograder.service.gradebook.mirror.Mirror` of ``args.course`` and ``args.db``:
    its gradebook is the course's gradebook.db with SQLite, else the service's database."""
    from autograder.service.gradebook.mirror import Mirror
    from autograder.service.store import database_url, url_text
    url = database_url(args.db)
    return Mirror(args.course, None if url.get_backend_name() == "sqlite" else url_text(url))


def open_store(args, stopping=None):
    """``(Store, Mirror)`` for ``args.db``; waits (with backoff) while the database is away."""
    venv_tools_on_path()
    from autograder.service.grading import Backoff
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
    :class:`~autograder.service.grading.GradingThreads`."""
    from autograder import exercises, pipeline, sandbox
    from autograder.service.grading import GradingThreads
    # One zygote for the process's lifetime, with every exercise's imports loaded.
    pipeline.prepare(exercises.names())
    limits = sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib)
    grading = GradingThreads(store, mirror, limits, args.jobs, args.slot_base, args.lease,
                             args.recorded)
    freeze_start_up()
    grading.start()
    return grading


def freeze_start_up():
    """Called once a process's modules and store are set up, before any thread or request
    makes objects of its own: what exists now lives as long as the process, so it is moved
    out of the garbage collector's sight (``gc.freeze``); each later collection walks only
    what requests and gradings made, not the imported modules of tornado, SQLAlchemy and
    nbgrader."""
    gc.freeze()
