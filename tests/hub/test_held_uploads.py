"""Eve (here bob) makes the hub's grading service hold her unfinished submissions, by each
way a learner reaches it: through the hub's proxy with her hub token in the
``Authorization`` header (``token`` or ``Bearer``; the service reads none in a URL), and
through ``grader.sock`` as her server's submit cell does. Each way opens a dozen uploads
of almost ``GRADER_MAX_BYTES`` and stalls. The service holds ``GRADER_MAX_UPLOADS`` of her
bodies in all, whatever the way, and when she finishes them the others are answered 429
``uploads_busy`` with words, through the proxy too; meanwhile ann (here ada) submits and
is scored. (Each framing and route, directly: tests/service/test_held_uploads.py.)

Measured here: 36 stalled uploads raised the service's resident memory by 12 MiB (181 MiB
before the cap); ann was scored meanwhile. Eight stalled 8 MiB bodies grew the hub by 57
MiB before its cut-off, by about 1 MiB after; the site and the service by 0-0.1 MiB.
"""
from __future__ import annotations

import json
import socket
import sqlite3
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import requests

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
            "proxy, bearer": (proxy, prefixed, {"Authorization": f"Bearer {token}"}),
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


def _listener(hub, setting):
    """The pid of the process listening on the hub's port ``setting`` (a name)."""
    port = int(hub.env[setting])
    for proc in psutil.process_iter():
        try:
            if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN
                   for c in proc.net_connections("tcp")):
                return proc.pid
        except psutil.Error:
            continue
    raise AssertionError(f"nothing listens on {setting}")


def _rss_mib(pid):
    return psutil.Process(pid).memory_info().rss / MIB


def test_a_learner_holds_few_uploads_by_every_way(hub, sign_in, released_course):
    eve, ann = sign_in("bob"), sign_in("ada")
    start_server(eve)  # the hub opens grader.sock with the first server
    pid = _listener(hub, "GRADER_PORT")
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


BIG = 8 * MIB  # an anonymous body that never ends
ANONYMOUS = 8  # such bodies per way and framing


def _anonymous_ways(hub):
    """``{way: (connection factory, path, listener's port setting)}``: where anybody sends a
    body that the hub, the course site or the grading service reads before any sign-in."""
    public = urlsplit(hub.url("/"))
    proxy = lambda: HTTPConnection(public.hostname, public.port, timeout=60)  # noqa: E731
    pipes = learner_net.socket_folder(Path(hub.env["HUB_STATE"]))
    return {"hub, proxy": (proxy, "/hub/login", "HUB_API_PORT"),
            "hub, hub.sock": (lambda: _UnixConnection(str(pipes / "hub.sock")),
                              "/hub/api/users", "HUB_API_PORT"),
            "site, proxy": (proxy, "/services/course/book/intro.html", "SITE_PORT"),
            "grader, proxy": (proxy, "/services/grader/api/health", "GRADER_PORT"),
            "grader, grader.sock": (lambda: _UnixConnection(str(pipes / "grader.sock")),
                                    "/services/grader/api/health", "GRADER_PORT")}


def _anonymous(connect, path, framing):
    """A connection that sent all but the last MiB of a :data:`BIG` body; None if the far
    end closed it first (a body refused)."""
    conn = connect()
    try:
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
        conn.putheader(*(("Content-Length", str(BIG)) if framing == "length"
                         else ("Transfer-Encoding", "chunked")))
        conn.endheaders()
        for _ in range(BIG // MIB - 1):
            part = b"a" * MIB
            conn.send(part if framing == "length" else b"%x\r\n%s\r\n" % (len(part), part))
    except OSError:
        conn.close()
        return None
    return conn


def test_no_body_sent_to_the_hub_or_its_services_is_held_whole(hub, sign_in):
    """Bodies nobody signed in for, each way and framing, stalled a MiB before their end:
    the hub, the course site and the grading service each read a small part of each
    (the hub 1 MiB, the others 64 KiB) and grow by a few MiB, not by the bodies."""
    start_server(sign_in("bob"))  # the hub opens its pipes with the first server
    for way, (connect, path, setting) in _anonymous_ways(hub).items():
        for framing in ("length", "chunked"):
            pid = _listener(hub, setting)
            base = _rss_mib(pid)
            held = [_anonymous(connect, path, framing) for _ in range(ANONYMOUS)]
            time.sleep(1)
            grown = _rss_mib(pid) - base
            for conn in held:
                if conn:
                    conn.close()
            print(f"{way}, {framing}: {ANONYMOUS} bodies of {BIG // MIB} MiB, grew {grown:.1f} MiB")
            assert grown < 12, (way, framing, grown)


def _tokens(hub, name):
    """How many API tokens the hub's database holds for user ``name``."""
    db = sqlite3.connect(f"file:{hub.env['HUB_STATE']}/jupyterhub.sqlite?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM api_tokens JOIN users ON users.id = "
                          "api_tokens.user_id WHERE users.name = ?", (name,)).fetchone()[0]
    finally:
        db.close()


def test_a_learner_mints_no_hub_tokens(hub, accounts, sign_in):
    """Each token is a row of the hub's database that lives until it expires (never, unless
    asked): a learner who could mint them would fill the hub's disk at her pace. By each
    credential she holds (the course site's token; her name and password in the request,
    which JupyterHub takes in place of a sign-in and which give her the scopes of her hub
    cookie, as the hub's token page would), for a token asked to expire or not, the hub
    refuses, and its database holds no more of hers."""
    eve = sign_in("bob")
    api = hub.url(f"/hub/api/users/{eve.name}")
    credentials = {"site token": eve.headers, "her password alone": {}}
    password = {"auth": {"username": eve.name, "password": accounts[0]["bob"].password}}
    bodies = ({}, {"expires_in": None}, {"expires_in": 3600, "note": "mine"},
              {"scopes": ["tokens!user"]}, password, {**password, "expires_in": None})
    before = _tokens(hub, eve.name)
    for way, headers in credentials.items():
        if headers:  # the credential is good: what she may do, it does
            assert requests.get(api, headers=headers, timeout=60).status_code == 200, way
        for body in bodies:
            reply = requests.post(api + "/tokens", json=body, headers=headers, timeout=60)
            assert reply.status_code == 403, (way, body, reply.status_code, reply.text[:300])
            assert "XSRF" not in reply.text, (way, reply.text)  # refused for what she asked
    assert _tokens(hub, eve.name) == before
