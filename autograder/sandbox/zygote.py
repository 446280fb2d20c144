"""The zygote: one process that imports JAX once and forks a supervisor per submission.

Runs in the zygote's process, which the grader's process starts
(:class:`autograder.sandbox.Zygote`) as ``main(socket path, exercises)``.
A fresh interpreter that imports JAX and compiles costs about a second; a
fork of a process that has already imported JAX (but started no backend, so
no threads or devices exist yet) costs milliseconds. The grader talks to the
zygote over a Unix socket in a root-only directory; each connection is one
submission, served by a forked child, the supervisor
(:func:`autograder.sandbox.supervisor.serve`).
"""
from __future__ import annotations

import gc
import os
import select
import shutil
import socketserver
import sys
from collections.abc import Sequence

from autograder.sandbox import compile_cache, confine, learner, supervisor


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        """Runs in a forked child per connection: the supervisor of one submission.

        The first byte carries the uid lease's descriptor (SCM_RIGHTS), so
        this process holds the lease for as long as it runs, even if the
        grader that leased it is killed.
        """
        supervisor.serve(self.connection, self.rfile, self.wfile)


class _Server(socketserver.ForkingMixIn, socketserver.UnixStreamServer):
    max_children = 256

    def service_actions(self) -> None:
        """Between requests: reap children, and exit once the grader is gone.

        The grader holds our stdin open and never writes; EOF means it died
        (even by SIGKILL), so no zygote outlives the grading run.
        """
        super().service_actions()
        if select.select([sys.stdin], [], [], 0)[0] and not os.read(sys.stdin.fileno(), 1):
            shutil.rmtree(os.path.dirname(str(self.server_address)), ignore_errors=True)
            os._exit(0)


def main(path: str, exercises: Sequence[str] = (), cached: Sequence[str] = ()) -> None:
    """The zygote's entry point: preload ``exercises``, note the compile cache's warm
    folders ``cached`` (:mod:`autograder.sandbox.compile_cache`: their paths only; each
    supervisor serves their entries after it forked its learner), listen on ``path``, say
    ready (and, on the same line, why learner processes cannot be isolated, if they
    cannot), serve."""
    problem = confine.isolation_problem()
    learner.preload(exercises)
    compile_cache.FOLDERS[:] = cached
    # What preload made lives as long as the zygote: out of the collector's sight, a
    # learner's gc.collect() (and each automatic one) skips those objects, and no
    # collection dirties the pages every fork shares (Python's gc.freeze docs).
    gc.freeze()
    server = _Server(path, _Handler)
    print("ready" + (f" {problem}" if problem else ""), flush=True)
    server.serve_forever(poll_interval=0.05)
