"""The hub's proxy holds at most ``HUB_MAX_HELD_PER_LEARNER`` requests and websockets at
once for one person, counted by whose hub token each carries (the hub says), whatever it is
sent to; what carries no token it knows shares one pool that a slow flood cannot keep fast
requests out of. Tried as eve's own client would, through the real hub and proxy (the
shared hub, default caps), with every way a request carries her token; beside it a
classmate signs in, submits and is scored, and holds requests of her own.

Measured here (2 shared cores, three runs): 140 over her cap of 64 answered 429 in 0.1-0.2 s,
the proxy +121-123 descriptors while she held 64; a classmate's sign-in 0.8-1.0 s quiet and
0.4-0.7 s beside her, submission to score 1.8-2.7 s quiet and 1.1-1.7 s beside her; beside
1,124 held with no token the hub knows, sign-in 0.4-1.0 s and submission to score 1.1-1.8 s.
Allowed: 3 times the quiet hub's
time plus 10 s (the machine is shared with other test runs)."""
from __future__ import annotations

import base64
import json
import secrets
import socket
import time
from pathlib import Path

import psutil
import pytest
import requests

from autograder import defaults
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.accounts import more_learners
from tests.hub.running import Signed
from tests.hub.test_attacks import start_server, stop_server
from tests.hub.test_limits import classmate_seconds

CAP = defaults.HUB_MAX_HELD_PER_LEARNER
POOL = defaults.HUB_MAX_HELD_ANONYMOUS
# each way a request carries her token: where it goes, how it carries it, what it holds
KINDS = ("grader-token", "grader-bearer", "hub-api-token", "server-url-token",
         "server-cookie", "server-ws-url-token", "server-ws-header")


@pytest.fixture(scope="module")
def eve(hub, accounts):
    """A learner of her own (no connection another test left counts against her), signed in,
    her server running: ``(Signed, server model)``."""
    with more_learners(accounts, 1) as (account,):
        signed = Signed(hub, account)
        yield signed, start_server(signed)
        stop_server(signed)


def _server_cookie(hub, signed):
    """The cookie eve's browser holds for her own server, got as the browser gets it:
    her server's page sends her to the hub's OAuth, which (she is signed in to the hub)
    sends her back with a code, for which her server sets the cookie: ``"name=value"``."""
    port = hub.env["PORT"]
    own, local = f"{signed.name}.localhost:{port}", f"http://127.0.0.1:{port}"
    page = requests.get(f"{local}/user/{signed.name}/lab", headers={"Host": own},
                        allow_redirects=False, timeout=60)
    assert page.status_code == 302, (page.status_code, page.text[:300])
    state = "; ".join(f"{c.name}={c.value}" for c in page.cookies)
    back = signed.session.get(page.headers["Location"], allow_redirects=False, timeout=60)
    assert back.status_code == 302 and "oauth_callback" in back.headers["Location"], back.text[:300]
    callback = back.headers["Location"].split(own, 1)[1]
    done = requests.get(local + callback, headers={"Host": own, "Cookie": state},
                        allow_redirects=False, timeout=60)
    name = f"jupyterhub-user-{signed.name}"
    assert name in done.cookies, (done.status_code, done.headers)
    return f"{name}={done.cookies[name]}"


def _request(hub, server, name, token, kind, cookie=""):
    """``(request bytes, whether a websocket)`` for one held thing of ``kind`` (see KINDS):
    POSTs whose body (100 bytes said) never comes, or websockets to her server's event
    stream; ``token`` in the header or the URL, or ``cookie`` (her server's), as ``kind``
    says."""
    host = f"localhost:{hub.env['PORT']}"
    own = f"{name}.localhost:{hub.env['PORT']}"
    base = f"/user/{name}/"
    auth = ["Authorization: token " + token]
    if kind == "grader-token":
        line, head = "POST /services/grader/api/submissions", [f"Host: {host}"] + auth
    elif kind == "grader-bearer":
        line, head = "POST /services/grader/api/submissions", [f"Host: {host}",
                                                                "Authorization: Bearer " + token]
    elif kind == "hub-api-token":
        line, head = f"POST /hub/api/users/{name}/tokens", [f"Host: {host}"] + auth
    elif kind == "server-url-token":
        line, head = f"POST {base}api/contents?token={token}", [f"Host: {own}"]
    elif kind == "server-cookie":  # her server's own cookie (HubOAuth's, holding a token)
        line, head = f"POST {base}api/contents", [f"Host: {own}", f"Cookie: {cookie}"]
    else:
        path = f"{base}api/events/subscribe" + (f"?token={token}" if kind.endswith("url-token")
                                                else "")
        head = [f"Host: {own}", "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
        return "\r\n".join([f"GET {path} HTTP/1.1"] + head + ([] if "url" in kind else auth)
                           + ["", ""]).encode(), True
    head += ["Content-Type: application/json", "Content-Length: 100"]
    return "\r\n".join([line + " HTTP/1.1"] + head + ["", ""]).encode(), False


def _open(hub, raw):
    conn = socket.create_connection(("127.0.0.1", int(hub.env["PORT"])), timeout=30)
    conn.sendall(raw)
    return conn


def _said(conn, wait):
    """The first bytes the proxy sent on ``conn`` within ``wait`` seconds (b"" for none)."""
    conn.settimeout(wait)
    try:
        return conn.recv(2000)
    except TimeoutError:
        return b""
    except ConnectionError:
        return b"<closed>"


def _ended(conn):
    """Whether the proxy closes ``conn`` within 10 s, whatever it says first."""
    conn.settimeout(10)
    try:
        while conn.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


def _hold(hub, requests_):
    """Open each of ``requests_`` (``(bytes, websocket)``); once the proxy had time to answer:
    ``[(socket, what it said)]``: b"" while a POST's body is awaited, 101 for a websocket."""
    conns = [(_open(hub, raw), ws) for raw, ws in requests_]
    time.sleep(1.5)
    return [(conn, _said(conn, 10 if ws else 0.05)) for conn, ws in conns]


def _held(said, websocket):
    return said.startswith(b"HTTP/1.1 101") if websocket else said == b""


def _proxy_descriptors(hub):
    pid = json.loads((Path(hub.env["HUB_STATE"]) / "proxy.pid").read_text())["pid"]
    return psutil.Process(pid).num_fds()


def _close(conns):
    for conn, _ in conns:
        conn.close()


def test_what_one_person_holds_through_the_proxy_is_capped(hub, eve, accounts, released_course):
    """eve holds requests and websockets through the proxy, her token carried every way a
    client may (KINDS), to the grading service, the hub's API and her own server, in turn:
    ``HUB_MAX_HELD_PER_LEARNER`` of them are held; every kind more gets 429 at once and
    closed, so the proxy's descriptors stay bounded. Meanwhile ada is not locked out: she
    holds requests of her own, signs in, submits and is scored about as fast as quiet. Once
    eve lets go, she may hold again."""
    signed, server = eve
    made, _ = accounts
    cookie = _server_cookie(hub, signed)
    wanted = [_request(hub, server, signed.name, signed.token, KINDS[i % len(KINDS)], cookie)
              for i in range(CAP)]
    notebook = with_answer(released_notebook(released_course),
                           (SAMPLES / "reference.py").read_text())
    quiet = classmate_seconds(hub, made["ada"], notebook)
    before = _proxy_descriptors(hub)
    held = _hold(hub, wanted)
    try:
        assert all(_held(said, ws) for (_, said), (_, ws) in zip(held, wanted)), \
            [said[:60] for _, said in held]
        start = time.monotonic()
        over = [(_open(hub, _request(hub, server, signed.name, signed.token, kind, cookie)[0]),
                 kind)
                for kind in KINDS for _ in range(20)]
        refused = [(_said(conn, 30), kind) for conn, kind in over]
        seconds = time.monotonic() - start
        assert all(said.startswith(b"HTTP/1.1 429") and b"Too many requests at once" in said
                   for said, _ in refused), {kind: said[:60] for said, kind in refused}
        assert all(_ended(conn) for conn, _ in over)  # each closed after its 429
        grown = _proxy_descriptors(hub) - before
        _close(over)
        ada = Signed(hub, made["ada"])  # a classmate holds her own meanwhile
        hers = _hold(hub, [_request(hub, server, ada.name, ada.token, "grader-token")] * 8)
        try:
            assert all(said == b"" for _, said in hers), [s[:60] for _, s in hers]
            beside = classmate_seconds(hub, made["ada"], notebook)
        finally:
            _close(hers)
    finally:
        _close(held)
    print(f"{len(over)} over her cap of {CAP} answered 429 in {seconds:.1f} s; proxy "
          f"descriptors +{grown} while she held {CAP}; classmate sign-in {quiet[0]:.1f} s "
          f"quiet, {beside[0]:.1f} s beside her, submit to score {quiet[1]:.1f} s quiet, "
          f"{beside[1]:.1f} s beside her")
    assert seconds < 30 and grown <= 2 * CAP + 40, (seconds, grown)  # two per held, no more
    for calm, loaded in zip(quiet, beside):
        assert loaded <= 3 * calm + 10, (quiet, beside)
    time.sleep(2)  # the proxy sees each close
    again = _hold(hub, wanted[:len(KINDS)])
    _close(again)
    assert all(_held(said, ws) for (_, said), (_, ws) in zip(again, wanted)), again


def test_no_token_or_a_forged_one_cannot_crowd_out_the_class(hub, eve, accounts,
                                                            released_course):
    """eve holds more requests than the anonymous pool takes without a token, with a token
    the hub does not know (made up), and with a classmate's name in a cookie that is not
    hers: none counts against anyone, the oldest are ended as newcomers come, and ada
    signs in (a request with no token), submits and is scored meanwhile."""
    signed, server = eve
    made, _ = accounts
    notebook = with_answer(released_notebook(released_course),
                           (SAMPLES / "reference.py").read_text())
    ada = Signed(hub, made["ada"])
    port = hub.env["PORT"]
    made_up = base64.b64encode(secrets.token_hex(16).encode()).decode()  # a token of nobody's
    forged = f"2|1:0|10:0|4:name|{len(made_up)}:{made_up}|00"  # in tornado's signed form
    nobody = [(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{head}"
               "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n"
               ).encode() for path, host, head in (
        ("/hub/login", "localhost", ""),  # sign-in's own POST, its body never finished
        ("/hub/login", "localhost", f"Authorization: token {secrets.token_hex(16)}\r\n"),
        (f"/user/{ada.name}/api/contents", f"{ada.name}.localhost",
         f"Cookie: jupyterhub-user-{ada.name}={forged}\r\n"))]
    flood = [_open(hub, nobody[i % 3]) for i in range(POOL + 100)]
    try:
        time.sleep(3)  # older than the pool's grace: newcomers may end them
        beside = classmate_seconds(hub, made["ada"], notebook)
        hers = _hold(hub, [_request(hub, server, ada.name, ada.token, "grader-token")] * 4)
        _close(hers)
        assert all(said == b"" for _, said in hers), [s[:60] for _, s in hers]
        ended = sum(_gone(conn) for conn in flood)
    finally:
        for conn in flood:
            conn.close()
    print(f"beside {POOL + 100} held without a token she knows: classmate sign-in "
          f"{beside[0]:.1f} s, submit to score {beside[1]:.1f} s; {ended} of hers ended")
    assert beside[0] < 30 and beside[1] < 60, beside
    assert ended >= 100, ended  # the pool holds no more than its size, newcomers still come in


def _gone(conn):
    """Whether the proxy let ``conn`` go: closed it, or refused it (503), holding it no more."""
    conn.setblocking(False)
    try:
        conn.recv(1)
    except BlockingIOError:
        return False
    except ConnectionError:
        pass
    return True
