"""Eve (here bob) makes the hub's grading service hold her unfinished submissions, by each
way a learner reaches it: through the hub's proxy with her hub token in the
``Authorization`` header or in the URL, and through ``grader.sock`` as her server's submit
cell does. Each way opens a dozen uploads of almost ``GRADER_MAX_BYTES`` and stalls. The
service holds ``GRADER_MAX_UPLOADS`` of her bodies in all, whatever the way, and when she
finishes them the others are answered 429 ``uploads_busy`` with words, through the proxy
too; meanwhile ann (here ada) submits and is scored. (Each framing and route, directly:
tests/service/test_held_uploads.py.)

Measured here: 36 stalled uploads raised the service's resident memory by 10-13 MiB (by
about 180 MiB before the cap); ann was scored meanwhile.
"""
from __future__ import annotations

import json
import socket
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from autograder import defaults
from deploy.hub import learner_net
from tests.grading.helpers import released_notebook
from tests.hub.test_attacks import start_server

MIB = 2**20
BODY = defaults.MAX_BYTES
SENT = BODY - 64 * 2**10  # of each body, before it stalls
EACH = 12  # uploads per way


class _UnixConnection(HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(60)
        self.sock.connect(self.path)


def _ways(hub, token):
    """``{way: (connection factory, path, headers)}``: each way eve reaches the service."""
    public = urlsplit(hub.url("/"))
    proxy = lambda: HTTPConnection(public.hostname, public.port, timeout=60)  # noqa: E731
    pipe = learner_net.socket_folder(Path(hub.env["HUB_STATE"])) / "grader.sock"
    prefixed = "/services/grader/api/submissions"
    header = {"Authorization": f"token {token}"}
    return {"proxy, header": (proxy, prefixed, header),
            "proxy, url": (proxy, f"{prefixed}?token={token}", {}),
            "grader.sock": (lambda: _UnixConnection(str(pipe)), prefixed, header)}


def _stalled(connect, path, headers):
    """A connection that sent all but the last part of a submission's body."""
    conn = connect()
    conn.putrequest("POST", path)
    for name, value in {**headers, "Content-Type": "application/json",
                        "Content-Length": str(BODY)}.items():
        conn.putheader(name, value)
    conn.endheaders()
    for start in range(0, SENT, MIB):
        conn.send(b" " * min(MIB, SENT - start))
    return conn


def _finish(conn):
    conn.send(b" " * (BODY - SENT))
    reply = conn.getresponse()
    return reply.status, json.loads(reply.read())


def _service_pid(hub):
    port = int(hub.env["GRADER_PORT"])
    for proc in psutil.process_iter(["cmdline"]):
        if "autograder.service" in " ".join(proc.info["cmdline"] or ()):
            try:
                if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN
                       for c in proc.net_connections("tcp")):
                    return proc.pid
            except psutil.Error:
                continue
    raise AssertionError("no grading service listening on GRADER_PORT")


def _rss_mib(pid):
    return psutil.Process(pid).memory_info().rss / MIB


def test_a_learner_holds_few_uploads_by_every_way(hub, sign_in, released_course):
    eve, ann = sign_in("bob"), sign_in("ada")
    start_server(eve)  # the hub opens grader.sock with the first server
    pid = _service_pid(hub)
    base = _rss_mib(pid)
    held = [(way, _stalled(*how)) for way, how in _ways(hub, eve.token).items()
            for _ in range(EACH)]
    time.sleep(2)
    grown = _rss_mib(pid) - base
    print(f"{len(held)} stalled uploads: the service grew {grown:.1f} MiB")
    assert grown < defaults.MAX_UPLOADS * BODY / MIB + 15, grown

    scored = ann.wait_done(ann.submit(released_notebook(released_course)))
    assert scored["result"] is not None, scored

    answers = [(way, *_finish(conn)) for way, conn in held]
    for _, conn in held:
        conn.close()
    busy = [(way, status, answer) for way, status, answer in answers if status == 429]
    assert len(busy) == len(held) - defaults.MAX_UPLOADS, answers
    assert {way for way, _, _ in busy} == set(_ways(hub, eve.token)), busy
    assert all(answer["code"] == "uploads_busy" and "still being sent" in answer["error"]
               for _, _, answer in busy), busy
