"""Run the grading service: ``python -m autograder.service [options]``.

Every option has an environment variable (shown in ``--help``); ``make serve``
starts it with the defaults (:mod:`autograder.defaults`) on http://HOST:GRADER_PORT: the HTTP API and
``GRADER_JOBS`` grading threads in one process. ``--jobs 0`` runs the API
alone, for deployments whose grading runs in ``python -m autograder.service.worker``
processes elsewhere (several API processes can share one PostgreSQL database).
"""
import asyncio
import os
import signal
import sys

import tornado.httpserver

from autograder import defaults
from autograder.service import config
from autograder.service.app import DRAIN_BYTES, Settings, make_app
from autograder.service.store import Caps

env = config.env
setting = defaults.setting


def parse(argv):
    site = setting("PORT")
    host = env("GRADER_HOST", setting("HOST"))
    p = config.parser("python -m autograder.service", "The course's grading service (HTTP API).")
    p.add_argument("--host", default=host, help=f"GRADER_HOST (default HOST or {defaults.HOST})")
    p.add_argument("--port", type=int, default=int(setting("GRADER_PORT")),
                   help=f"GRADER_PORT (default {defaults.GRADER_PORT})")
    p.add_argument("--origins", default=env(
        "GRADER_ORIGINS", f"http://{host}:{site},http://127.0.0.1:{site},http://localhost:{site}"),
                   help="GRADER_ORIGINS: comma-separated origins allowed by CORS "
                        "(default: the course site on PORT)")
    p.add_argument("--max-bytes", type=int, default=int(setting("GRADER_MAX_BYTES")),
                   help=f"GRADER_MAX_BYTES: largest request accepted, in bytes "
                        f"(default {defaults.MAX_BYTES})")
    p.add_argument("--rate", default=setting("GRADER_RATE"),
                   help=f"GRADER_RATE: submissions per learner per seconds, N/S "
                        f"(default {defaults.ENVIRONMENT['GRADER_RATE']})")
    p.add_argument("--max-per-learner", type=int, default=int(setting("GRADER_MAX_PER_LEARNER")),
                   help=f"GRADER_MAX_PER_LEARNER: a learner's submissions waiting "
                        f"(default {defaults.MAX_PER_LEARNER})")
    p.add_argument("--max-per-client", type=int, default=int(setting("GRADER_MAX_PER_CLIENT")),
                   help=f"GRADER_MAX_PER_CLIENT: submissions waiting from one client address "
                        f"(default {defaults.MAX_PER_CLIENT}; 0 = no cap, e.g. behind a proxy "
                        f"where every request has the proxy's address)")
    p.add_argument("--max-queue", type=int, default=int(setting("GRADER_MAX_QUEUE")),
                   help=f"GRADER_MAX_QUEUE: submissions waiting before new ones get 503 "
                        f"(default {defaults.MAX_QUEUE})")
    p.add_argument("--header-timeout", type=float, default=float(setting("GRADER_HEADER_TIMEOUT")),
                   help=f"GRADER_HEADER_TIMEOUT: seconds to send a request's headers, and "
                        f"that an idle connection is kept (default {defaults.HEADER_TIMEOUT_S:g})")
    p.add_argument("--body-timeout", type=float, default=float(setting("GRADER_BODY_TIMEOUT")),
                   help=f"GRADER_BODY_TIMEOUT: seconds to send a request's body "
                        f"(default {defaults.BODY_TIMEOUT_S:g})")
    config.add_grading_options(p, os.cpu_count() or 1)
    p.add_argument("--auth", choices=("none", "hub"), default=env("GRADER_AUTH", "none"),
                   help="GRADER_AUTH: 'hub' when JupyterHub runs the service (make hub): "
                        "learners are hub users, see autograder/service/auth.py (default none)")
    args = p.parse_args(argv)
    try:
        count, seconds = args.rate.split("/")
        args.rate = (int(count), float(seconds))
    except ValueError:
        p.error("--rate must look like 10/60 (submissions/seconds)")
    if args.jobs < 0:
        p.error("--jobs must be 0 (API only) or more")
    return args


def main(argv=None):
    args = parse(argv)
    config.setup_logging()
    store, mirror = config.open_store(args)
    grading = config.start_grading(args, store, mirror) if args.jobs else None
    caps = Caps(rate_count=args.rate[0], rate_seconds=args.rate[1],
                per_learner=args.max_per_learner, per_client=args.max_per_client,
                max_queue=args.max_queue)
    identity = None
    if args.auth == "hub":
        from autograder.service.auth import HubIdentity

        identity = HubIdentity()
    settings = Settings(identity=identity, prefix=identity.prefix if identity else "/",
                        max_bytes=args.max_bytes, caps=caps, timeout=args.timeout,
                        memory_mib=args.memory_mib, address=f"http://{args.host}:{args.port}",
                        recorded=args.recorded,
                        # dict.fromkeys: each once, in order (HOST is usually 127.0.0.1 itself)
                        origins=tuple(dict.fromkeys(o.strip().rstrip("/") for o in args.origins.split(",")
                                                    if o.strip())))

    async def serve():
        server = tornado.httpserver.HTTPServer(
            make_app(store, grading, settings, mirror), max_body_size=max(DRAIN_BYTES, args.max_bytes),
            idle_connection_timeout=args.header_timeout, body_timeout=args.body_timeout)
        server.listen(args.port, args.host)
        config.log.info("grading service on http://%s:%d/ (db %s, gradebook %s, %s)",
                        args.host, args.port, store.describe(), mirror.where(),
                        f"{args.jobs} grading slot(s)" if args.jobs else "API only")
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()
        config.log.info("stopping; unfinished gradings resume at the next start")
        server.stop()
        if grading:
            grading.stop()

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
