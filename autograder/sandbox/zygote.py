"""The zygote: one process that imports JAX once and forks per submission.

A fresh interpreter that imports JAX and compiles costs about a second; a
fork of a process that has already imported JAX (but started no backend, so
no threads or devices exist yet) costs milliseconds. The grader talks to the
zygote over a Unix socket in a root-only directory; each connection is one
submission, served by a forked supervisor (:func:`autograder.sandbox.supervise`).
"""
import atexit
import json
import os
import select
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        """Runs in a forked child per connection: the supervisor of one submission.

        The first byte carries the uid lease's descriptor (SCM_RIGHTS), so
        this process holds the lease for as long as it runs, even if the
        grader that leased it is killed.
        """
        from autograder import sandbox

        _, fds, _, _ = socket.recv_fds(self.connection, 1, 1)
        msg = json.loads(self.rfile.readline())
        lease = sandbox.Lease(msg["uid"], fds[0]) if fds and msg["uid"] is not None else None
        outcome = sandbox.supervise(msg["request"], sandbox.Limits(**msg["limits"]), lease)
        self.wfile.write(sandbox.to_json(outcome).encode() + b"\n")


class _Server(socketserver.ForkingMixIn, socketserver.UnixStreamServer):
    max_children = 256

    def service_actions(self):
        """Between requests: reap children, and exit once the grader is gone.

        The grader holds our stdin open and never writes; EOF means it died
        (even by SIGKILL), so no zygote outlives the grading run.
        """
        super().service_actions()
        if select.select([sys.stdin], [], [], 0)[0] and not os.read(sys.stdin.fileno(), 1):
            shutil.rmtree(os.path.dirname(self.server_address), ignore_errors=True)
            os._exit(0)


def main(path, exercises=()):
    """Zygote entry point: preload, listen on ``path``, say ready, serve forever."""
    from autograder.sandbox import learner

    learner.preload(exercises)
    server = _Server(path, _Handler)
    print("ready", flush=True)
    server.serve_forever(poll_interval=0.05)


def interpreter():
    """An interpreter the sandbox uid can read (the venv's may live under /root)."""
    if os.geteuid() == 0 and Path("/usr/bin/python3.11").exists():
        return "/usr/bin/python3.11"
    return sys.executable


class Zygote:
    """Grader-side handle on a zygote process (started on first use)."""

    def __init__(self):
        self.proc, self.path, self.lock, self.ready = None, None, threading.Lock(), False

    def launch(self, exercises=()):
        """Start the zygote without waiting for it (it imports JAX meanwhile).

        ``exercises`` whose probes list ``PRELOAD`` modules get them imported
        once here rather than in every learner process.
        """
        with self.lock:
            if self.proc and self.proc.poll() is None:
                return
            self.ready = False
            folder = tempfile.mkdtemp(prefix="zygote-")  # mode 0700: root only
            self.path = os.path.join(folder, "socket")
            from autograder.sandbox import XLA_FLAGS, import_paths

            code = (f"import sys; sys.path[:0] = {import_paths()!r}; "
                    f"from autograder.sandbox.zygote import main; main({self.path!r}, {tuple(exercises)!r})")
            env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=XLA_FLAGS)
            self.proc = subprocess.Popen([interpreter(), "-I", "-c", code], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True)

    def start(self):
        """Launch if needed, then wait until the zygote listens."""
        self.launch()
        with self.lock:
            if not self.ready:
                if self.proc.stdout.readline().strip() != "ready":
                    raise RuntimeError("the sandbox zygote did not start")
                self.ready = True

    def run(self, request, limits, lease):
        """Send one request; block until its :class:`~autograder.sandbox.Outcome`.

        ``lease`` (a :class:`~autograder.sandbox.Lease`, or None when not
        root) goes with it: its descriptor is passed to the supervisor.
        """
        from autograder import sandbox

        self.start()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(limits.seconds + 60)
            conn.connect(self.path)
            socket.send_fds(conn, [b"L"], [lease.fd] if lease else [])
            msg = {"request": request, "limits": asdict(limits), "uid": lease.uid if lease else None}
            conn.sendall(json.dumps(msg).encode() + b"\n")
            with conn.makefile("rb") as answer:
                line = answer.readline()
        if not line:
            raise RuntimeError("the sandbox supervisor closed without an answer")
        return sandbox.from_json(line)

    def stop(self):
        """Kill the zygote and remove its socket folder."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.path:
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


_shared = Zygote()
atexit.register(_shared.stop)


def shared():
    """The process-wide zygote, started on first use."""
    return _shared
