"""A learner's ("eve", here bob) processes against another's ("ann", here ada) browser and
origin under ``make hub``: a listener eve's server starts on a port of ``localhost``
(ann's browser would send it every cookie of that host name), and eve answering on the
route of ann's server once it stopped. Each attack is run as eve would run it; each
must fail."""
from __future__ import annotations

import asyncio
import json
import pwd
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote

import psutil
import requests
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.hub.test_attacks import SYSTEM_PYTHON, start_server, stop_server
from tests.hub.test_class_browser import browser_sign_in, server_pid

WAIT_S = 600  # give-up time for servers, not a timing assertion

# Answers every request with "eve", writing the Cookie header it received to stdout.
LISTENER = """\
import http.server, sys
class Take(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("got", self.headers.get("Cookie"), flush=True)
        self.send_response(200); self.end_headers(); self.wfile.write(b"eve answers")
    log_message = lambda *a: None
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), Take).serve_forever()
"""

# Listens where ann's server was (a TCP port or a UNIX socket path) and answers "eve".
TAKE_OVER = """\
import http.server, socketserver, sys, time
class Take(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"eve answers")
    log_message = lambda *a: None
class Unix(socketserver.UnixStreamServer):
    def get_request(self):
        conn, _ = super().get_request(); return conn, ("unix", 0)
where = sys.argv[1]
for _ in range(40):  # until her server has let go of it, as an attacker would
    try:
        server = (Unix(where, Take) if where.startswith("/")
                  else http.server.HTTPServer(("127.0.0.1", int(where)), Take))
        break
    except OSError as err:
        refused = err
        time.sleep(0.25)
else:
    print("refused", refused, flush=True); sys.exit(0)
print("listening", flush=True)
server.serve_forever()
"""


def free_unprivileged_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def in_server(name, *argv, **kwargs):
    """``argv`` as ``name``, in the network and mount namespaces of ``name``'s server (as
    a process her server, a kernel or a terminal of it, starts)."""
    uid = str(int(subprocess.check_output(["id", "-u", name])))
    gid = str(int(subprocess.check_output(["id", "-g", name])))
    return subprocess.Popen(["nsenter", "-t", str(server_pid(name)), "-n", "-m", "-S", uid,
                             "-G", gid, *argv], **kwargs)


def settled_content(page):
    """The page's HTML once it stopped navigating (Chromium's own error page included)."""
    for _ in range(50):
        try:
            page.wait_for_load_state("load")
            return page.content()
        except Exception:  # "the page is navigating": ask again
            time.sleep(0.2)
    return page.content()


def server_target(hub, name):
    """Where the hub (and its proxy) sends ``name``'s origin: a TCP port (str) or the path of
    a UNIX socket, from the hub's own database."""
    db = sqlite3.connect(f"file:{hub.env['HUB_STATE']}/jupyterhub.sqlite?mode=ro", uri=True)
    try:
        proto, ip, port = db.execute(
            "SELECT servers.proto, servers.ip, servers.port FROM servers JOIN spawners ON "
            "spawners.server_id = servers.id JOIN users ON users.id = spawners.user_id "
            "WHERE users.name = ?", (name,)).fetchone()
    finally:
        db.close()
    return unquote(ip) if proto == "http+unix" else str(port)


def test_a_port_a_learners_server_listens_on_gets_no_cookie_of_another(hub, accounts,
                                                                       browser, sign_in):
    """Eve's server starts a listener on a port of localhost; ann, signed in, opens eve's
    link to it. Her browser must not reach it (it exists only in eve's namespace), so it
    receives no cookie of the hub's host name."""
    made, _ = accounts
    eve = sign_in("bob")
    start_server(eve)
    port = free_unprivileged_port()
    got = Path(hub.root) / "listener.out"
    with open(got, "w") as out:
        listener = in_server(eve.name, SYSTEM_PYTHON, "-c", LISTENER, "127.0.0.1", str(port),
                             stdout=out, stderr=subprocess.STDOUT)
    try:
        # eve's own processes reach it: the listener runs
        probe = in_server(eve.name, SYSTEM_PYTHON, "-c",
                          "import sys, time, urllib.request\nfor _ in range(100):\n"
                          "    try: print(urllib.request.urlopen(sys.argv[1]).read().decode()); break\n"
                          "    except OSError: time.sleep(0.1)\n",
                          f"http://127.0.0.1:{port}/", stdout=subprocess.PIPE, text=True)
        assert "eve answers" in probe.communicate(timeout=60)[0]
        ann = browser_sign_in(browser, hub, made["ada"])
        assert ann.context.cookies()  # she has cookies to lose
        try:
            ann.goto(f"http://localhost:{port}/", timeout=30_000)
        except Exception:  # the browser's "connection refused": what should happen
            pass
        assert "eve answers" not in settled_content(ann)
        ann.context.close()
    finally:
        listener.kill()
        listener.wait()
    # one request only: eve's own probe, which carried no cookie
    assert got.read_text().splitlines() == ["got None"], got.read_text()
    stop_server(eve)


def test_another_learner_cannot_answer_on_a_stopped_servers_route(hub, accounts, sign_in):
    """Ann's server ends by itself (her "Shut Down", a crash); until the hub's next poll the
    proxy still routes her origin where her server was. Eve, with a shell, tries to listen
    there at once; a request for ann's origin must never get eve's answer."""
    ann, eve = sign_in("ada"), sign_in("bob")
    server = start_server(ann)
    where = server_target(hub, ann.name)
    psutil.Process(server_pid(ann.name)).terminate()  # as "Shut Down" in JupyterLab
    entry = pwd.getpwnam(eve.name)  # eve in a shell of her own (no server's namespace)
    take = subprocess.Popen(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                             "--clear-groups", SYSTEM_PYTHON, "-c", TAKE_OVER, where],
                            stdout=subprocess.PIPE, text=True)
    try:
        said = take.stdout.readline()
        origin = server["url"].split("/user/")[0].split("://")[1]  # <ann>.localhost:PORT
        for _ in range(10):
            reply = requests.get(f"http://127.0.0.1:{hub.env['PORT']}/user/{ann.name}/api",
                                 headers={"Host": origin}, timeout=30, allow_redirects=False)
            assert "eve answers" not in reply.text, (said, reply.status_code)
            time.sleep(0.5)
        assert said.startswith("refused"), said
    finally:
        take.kill()
        take.wait()
    deadline = time.monotonic() + WAIT_S
    while ann.session.get(hub.url(f"/hub/api/users/{ann.name}"),
                          headers=ann.headers).json()["servers"].get(""):
        assert time.monotonic() < deadline, "the hub never noticed the server ended"
        time.sleep(1)


def through_proxy(hub, server, path):
    """``(url, headers)`` for ``path`` of a learner's server through the proxy (its own
    origin's Host; ``*.localhost`` need not resolve here)."""
    origin = server["url"].split("/user/")[0].split("://")[1]
    base = server["url"].split(origin, 1)[1]
    return f"127.0.0.1:{hub.env['PORT']}{base}{path}", {"Host": origin}


async def terminal_says(url, headers, command, wanted):
    """Open a terminal's WebSocket at ``url``, type ``command``; True once ``wanted`` shows."""
    conn = await websocket_connect(HTTPRequest(url, headers=headers, connect_timeout=60))
    conn.write_message(json.dumps(["stdin", command + "\r"]))
    seen = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and wanted not in seen:
        message = await conn.read_message()
        if message is None:
            break
        kind, *data = json.loads(message)
        seen += "".join(str(d) for d in data) if kind == "stdout" else ""
    conn.close()
    return wanted in seen


def test_her_server_still_validates_and_runs_a_terminal(hub, sign_in):
    """What runs on the namespace's own loopback or needs no network keeps working:
    nbgrader's Validate (a kernel of its own) and a terminal."""
    ada = sign_in("ada")
    server = start_server(ada)
    auth = {"Authorization": f"token {ada.token}"}
    url, headers = through_proxy(hub, server, "assignments/validate")
    reply = requests.post("http://" + url, headers={**headers, **auth}, timeout=300,
                          data={"path": "update_with_donate/update_with_donate.ipynb"})
    assert reply.ok and reply.json()["success"], reply.text[:2000]
    url, headers = through_proxy(hub, server, "api/terminals")
    made = requests.post("http://" + url, headers={**headers, **auth}, timeout=60)
    assert made.ok, made.text
    url, headers = through_proxy(hub, server, f"terminals/websocket/{made.json()['name']}")
    assert asyncio.run(terminal_says("ws://" + url, {**headers, **auth},
                                     "echo in-her-terminal-$((6*7))", "in-her-terminal-42"))
    stop_server(ada)
