"""What one sender can make the grading service hold in memory with bodies she never
finishes, against the real service: each way of sending a body (a ``Content-Length`` or
chunks; almost all of it, or a trickle) to each kind of route (``api/submissions``, whose
bodies are read as they come; every other route, whose body tornado reads whole before
the route runs, signed in or not). A sender holds at most ``GRADER_MAX_UPLOADS``
submissions' bodies; one more is read and dropped, then answered 429 ``uploads_busy`` at
its end; a body to any other route is cut off at ``OTHER_BODY_BYTES``. Another sender
submits meanwhile. (Through the hub's proxy and ``grader.sock``, where senders are hub
users: tests/hub/test_held_uploads.py.)

Measured here: 24 uploads of almost 5 MiB each from one address, held, raised the
service's resident memory by 11-12 MiB with the cap (2), by 120 MiB without; 24 stalled
bodies of 4 MiB to another route by under 0.2 MiB, by 98 MiB before the cut-off.
"""
from __future__ import annotations

import json
import socket
import time

import pytest

from autograder import defaults
from tests.service.running import http
from tests.service.submissions import small_notebook
from tests.service.test_abuse import _post_from

MIB = 2**20
BODY = 5 * MIB  # the service's GRADER_MAX_BYTES here, as by default
HELD = 24  # bodies one sender opens at once
CAP = defaults.MAX_UPLOADS
OTHER_ROUTES = ("api/health", "api/config", "api/deadline", "api/standing",
                "api/submissions/abcdefghijklmnop", "no/such/route")
FRAMINGS = ("length", "chunked")


def _rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _head(path, framing, size, source="127.0.0.1"):
    length = f"Content-Length: {size}" if framing == "length" else "Transfer-Encoding: chunked"
    return (f"POST /{path} HTTP/1.1\r\nHost: {source}\r\nContent-Type: application/json\r\n"
            f"{length}\r\n\r\n").encode()


def _send(sock, framing, data):
    """``data`` (bytes) as the body's next part, in the request's framing."""
    if framing == "chunked":
        data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
    sock.sendall(data)


def _open(port, path, framing, size, sent):
    """A connection that sent its request's head and ``sent`` bytes of a body of ``size``
    (never finished); None when the service closed it before (a body refused at once)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(_head(path, framing, size))
        for start in range(0, sent, MIB):
            _send(sock, framing, b" " * min(MIB, sent - start))
    except (BrokenPipeError, ConnectionResetError):
        sock.close()
        return None
    return sock


def _finish(sock, framing, size, sent):
    """Send the rest of the body: ``(status, JSON answer)``."""
    _send(sock, framing, b" " * (size - sent))
    if framing == "chunked":
        sock.sendall(b"0\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < _length(reply):
        data = sock.recv(65536)
        if not data:
            break
        reply += data
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _length(reply):
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


@pytest.fixture
def uploads_service(new_service):
    return new_service(**{"max-bytes": BODY, "body-timeout": 60, "rate": "100/60"}).start()


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_sender_holds_few_submissions(uploads_service, framing):
    """``HELD`` submissions of almost ``BODY`` bytes each, from one address: the service
    holds ``CAP`` of them; the others, finished, get 429 with words; another address is
    answered meanwhile, and the held ones, finished, are graded or refused as usual."""
    service = uploads_service
    pid, port = service.proc.pid, service.port
    base = _rss_mib(pid)
    sent = BODY - 64 * 2**10
    socks = [_open(port, "api/submissions", framing, BODY, sent) for _ in range(HELD)]
    assert all(socks), "a submission's connection was closed before its body ended"
    time.sleep(1)
    held = _rss_mib(pid) - base
    assert held < CAP * BODY / MIB + 15, (base, held)  # CAP bodies, not HELD

    other = {"exercise": "donation_report", "learner": "another",
             "notebook": small_notebook("reference")}
    status, _, answer = _post_from(service, "127.0.0.2", other)
    assert status == 202, answer

    answers = [_finish(sock, framing, BODY, sent) for sock in socks]
    for sock in socks:
        sock.close()
    busy = [a for s, a in answers if s == 429]
    assert len(busy) == HELD - CAP, answers
    assert all(a["code"] == "uploads_busy" and f"{CAP} submissions of yours" in a["error"]
               for a in busy), busy
    # the held ones were read whole: refused for what they are (spaces are no JSON)
    assert sorted(s for s, _ in answers if s != 429) == [400] * CAP, answers


def test_other_routes_hold_no_large_body(uploads_service):
    """``HELD`` bodies of 4 MiB, never finished, to each route that reads no submission, in
    each framing: each is cut off at ``OTHER_BODY_BYTES`` (refused from its length, or
    closed once past it), so the service's memory barely moves, and it answers meanwhile."""
    service = uploads_service
    pid, port = service.proc.pid, service.port
    for route in OTHER_ROUTES:
        for framing in FRAMINGS:
            base = _rss_mib(pid)
            socks = [_open(port, route, framing, 4 * MIB, 4 * MIB - 4096) for _ in range(HELD)]
            time.sleep(0.5)
            held = _rss_mib(pid) - base
            assert held < 8, (route, framing, base, held)
            assert http("GET", service.url + "/api/health")[0] == 200
            for sock in socks:
                if sock:
                    sock.close()


def test_a_small_body_to_another_route_is_answered(uploads_service):
    """The cut-off leaves ordinary requests alone: a body under it reaches its route."""
    status, _, answer = http("POST", uploads_service.url + "/api/health", b"{}")
    assert status == 405 and answer["code"] == "method_not_allowed", (status, answer)
