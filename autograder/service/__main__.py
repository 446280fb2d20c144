"""Run the grading service: ``python -m autograder.service [options]``, or one of its
commands: ``python -m autograder.service <command> ...`` (:data:`COMMANDS`; the same as
``python -m autograder.service.<command> ...``, the spelling the docs use).

Every option has an environment variable (shown in ``--help``); ``make serve``
starts it with the defaults (:mod:`autograder.defaults`) on http://HOST:GRADER_PORT: the HTTP API and
``GRADER_JOBS`` grading threads in one process. ``--jobs 0`` runs the API
alone, for deployments whose grading runs in ``python -m autograder.service.worker``
processes elsewhere (several API processes can share one PostgreSQL database).
"""
import asyncio
import importlib
import signal
import sys

import tornado.httpserver

from autograder import defaults, options
from autograder.service import config
from autograder.service.api.app import Settings, make_app
from autograder.service.store import Caps

# the instructors' and deployments' commands, each a module of autograder/service/commands/
COMMANDS = ("backup", "deadlines", "members", "passback", "regrade", "worker")


def parse(argv):
    p = config.parser("python -m autograder.service", "The course's grading service (HTTP API).",
                      defaults.SERVICE)
    args = p.parse_args(argv)
    if args.origins is None:  # the course site on PORT, by each name it is opened at
        site = defaults.setting("PORT")
        args.origins = f"http://{args.host}:{site},http://127.0.0.1:{site},http://localhost:{site}"
    if args.jobs < 0:
        p.error("--jobs must be 0 (API only) or more")
    return args


def settings_of(args, identity):
    """The :class:`~autograder.service.api.app.Settings` the parsed ``args`` say."""
    caps = Caps(rate_count=args.rate.count, rate_seconds=args.rate.seconds,
                per_learner=args.max_per_learner, per_client=args.max_per_client,
                max_queue=args.max_queue, learner_bytes=args.learner_bytes)
    return Settings(identity=identity, prefix=identity.prefix if identity else "/",
                    max_bytes=args.max_bytes, caps=caps, timeout=args.timeout,
                    max_held=args.max_held, max_uploads=args.max_uploads,
                    address=f"http://{args.host}:{args.port}", recorded=args.recorded,
                    limits=options.shown(args, defaults.SERVICE),
                    # dict.fromkeys: each once, in order (HOST is usually 127.0.0.1 itself)
                    origins=tuple(dict.fromkeys(o.strip().rstrip("/") for o in args.origins.split(",")
                                                if o.strip())))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        return importlib.import_module(f"autograder.service.commands.{argv[0]}").main(argv[1:])
    args = parse(argv)
    config.setup_logging()
    store, mirror = config.open_store(args)
    grading = config.start_grading(args, store, mirror) if args.jobs else None
    identity = None
    if args.auth == "hub":
        from autograder.service.api.auth import HubIdentity

        identity = HubIdentity()
    elif args.auth == "local":
        from autograder.service.api.local_auth import LocalIdentity

        try:
            identity = LocalIdentity.from_environment()
        except ValueError as exc:
            sys.exit(f"--auth local: {exc} (GRADER_LEARNER, GRADER_TOKEN)")
    settings = settings_of(args, identity)
    if not grading:  # start_grading froze the process's start-up already
        config.freeze_start_up()

    async def serve():
        server = tornado.httpserver.HTTPServer(
            # every route but api/submissions (which raises it for itself, app.py) gets a
            # small body: tornado reads a body into memory before the route runs
            make_app(store, grading, settings, mirror), max_body_size=defaults.OTHER_BODY_BYTES,
            idle_connection_timeout=args.header_timeout, body_timeout=args.body_timeout)
        server.listen(args.port, args.host)
        config.log.info("grading service on http://%s:%d/ (db %s, gradebook %s, %s)",
                        args.host, args.port, store.where(), mirror.where(),
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
