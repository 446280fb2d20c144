"""Run the grading service: ``python -m autograder.service [options]``.

Every option has an environment variable (shown in ``--help``); ``make serve``
starts it with the defaults on http://127.0.0.1:8001.
"""
import argparse
import asyncio
import logging
import os
import signal
import sys
import warnings
from pathlib import Path

import tornado.httpserver

from autograder import sandbox, submission, zygote
from autograder.service.app import Settings, make_app
from autograder.service.gradebook import Mirror
from autograder.service.grader import Workers
from autograder.service.store import Store

REPO = Path(__file__).resolve().parents[2]


def _env(name, default):
    return os.environ.get(name, default)


def parse(argv):
    site = _env("PORT", "8000")
    host = _env("GRADER_HOST", _env("HOST", "127.0.0.1"))
    p = argparse.ArgumentParser(prog="python -m autograder.service",
                                description="The course's grading service (HTTP API).")
    p.add_argument("--host", default=host, help="GRADER_HOST (default HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, default=int(_env("GRADER_PORT", "8001")),
                   help="GRADER_PORT (default 8001)")
    p.add_argument("--db", default=_env("GRADER_DB", str(REPO / "grading.db")),
                   help="GRADER_DB: the SQLite database of submissions (default ./grading.db)")
    p.add_argument("--course", default=_env("GRADER_COURSE", str(REPO / "exercises")),
                   help="GRADER_COURSE: nbgrader course folder holding gradebook.db")
    p.add_argument("--origins", default=_env(
        "GRADER_ORIGINS", f"http://{host}:{site},http://127.0.0.1:{site},http://localhost:{site}"),
                   help="GRADER_ORIGINS: comma-separated origins allowed by CORS "
                        "(default: the course site on PORT)")
    p.add_argument("--max-bytes", type=int, default=int(_env("GRADER_MAX_BYTES", str(5 * 2**20))),
                   help="GRADER_MAX_BYTES: largest request accepted (default 5 MiB)")
    p.add_argument("--rate", default=_env("GRADER_RATE", "10/60"),
                   help="GRADER_RATE: submissions per learner per seconds, N/S (default 10/60)")
    p.add_argument("--max-queue", type=int, default=int(_env("GRADER_MAX_QUEUE", "1000")),
                   help="GRADER_MAX_QUEUE: submissions waiting before new ones get 503")
    p.add_argument("--jobs", type=int, default=int(_env("GRADER_JOBS", str(os.cpu_count() or 1))),
                   help="GRADER_JOBS: submissions graded in parallel (default: cores)")
    p.add_argument("--slot-base", type=int, default=int(_env("GRADER_SLOT_BASE", "100")),
                   help="GRADER_SLOT_BASE: first sandbox slot (uid 61000+slot when root); "
                        "keep it apart from other graders on the machine (default 100)")
    p.add_argument("--timeout", type=float, default=float(_env("GRADER_TIMEOUT", "60")),
                   help="GRADER_TIMEOUT: seconds per submission in the sandbox (default 60)")
    p.add_argument("--memory-mib", type=int, default=int(_env("GRADER_MEMORY_MIB", "4096")),
                   help="GRADER_MEMORY_MIB: address-space limit per submission")
    args = p.parse_args(argv)
    try:
        count, seconds = args.rate.split("/")
        args.rate = (int(count), float(seconds))
    except ValueError:
        p.error("--rate must look like 10/60 (submissions/seconds)")
    return args


def main(argv=None):
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("tornado.access").setLevel(logging.WARNING)  # no line per poll
    warnings.filterwarnings("ignore", module="nbformat")  # learners' notebooks, not ours
    log = logging.getLogger("autograder.service")
    store = Store(args.db)
    # One zygote for the service's lifetime, with every exercise's imports loaded.
    zygote.shared().launch(submission.EXERCISES)
    sandbox.protect()
    limits = sandbox.Limits(seconds=args.timeout, memory_mib=args.memory_mib)
    workers = Workers(store, Mirror(args.course), limits, args.jobs, args.slot_base)
    settings = Settings(max_bytes=args.max_bytes, rate_count=args.rate[0],
                        rate_seconds=args.rate[1], max_queue=args.max_queue,
                        origins=tuple(o.strip().rstrip("/") for o in args.origins.split(",")
                                      if o.strip()))

    async def serve():
        server = tornado.httpserver.HTTPServer(make_app(store, workers, settings),
                                               max_body_size=4 * args.max_bytes + 65536)
        server.listen(args.port, args.host)
        workers.start()
        log.info("grading service on http://%s:%d/ (db %s, gradebook %s/gradebook.db)",
                 args.host, args.port, args.db, args.course)
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()
        log.info("stopping; unfinished gradings resume at the next start")
        server.stop()
        workers.stop()

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
