"""A grading worker process: ``python -m autograder.service.worker [options]``.

Stateless: it claims submissions from the database (``GRADER_DB``, the same
as the API's), grades them in the sandbox and stores the results, renewing
its lease meanwhile (see :mod:`autograder.service.grading`). Start any number,
on any machine that reaches the database and has the course checkout with its
``.venv``; SIGTERM or Ctrl-C stops one (its unfinished grading is taken over
once its lease runs out, or within seconds by a process on the same machine).
"""
import signal
import sys
import threading

from autograder import defaults
from autograder.service import config


def parse(argv):
    p = config.parser("python -m autograder.service.worker",
                      "A grading worker of the course's grading service.", defaults.WORKER)
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1 for a worker")
    return args


def main(argv=None):
    args = parse(argv)
    config.setup_logging()
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    store, mirror = config.open_store(args, stopping)
    grading = config.start_grading(args, store, mirror)
    config.log.info("grading worker %s: %d slot(s), db %s", grading.name, args.jobs,
                    store.where())
    while not stopping.wait(1.0):
        pass
    config.log.info("stopping; an unfinished grading is taken over when its lease ends")
    grading.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
