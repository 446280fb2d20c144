"""What eve (here bob) puts where her server's socket is made cannot send the proxy or the
hub (both root) anywhere but her own server.

Her JupyterLab binds ``<socket_root>/<eve>/server.sock`` in a folder she owns, so that
name is hers to change. The variants are generated here: at that name she puts a
symbolic link to, a hard link of, or (renamed in) each socket she could aim at, or a
regular file. The sockets: ann's (here ada's) server, a root-only server's (a folder of
mode 0700), a socket like the grading sandbox's private one (``/tmp/zygote-*/socket``, its
path in ``ps``), the hub's own ``hub.sock``, and one in a folder anybody may write (so
that she can move it). She does it after her route was made and requests went through
(the proxy's pooled connections), and again racing her server's start. Each time her
origin answers only with her own server (or 502/503 while it has none), none of those
sockets is ever connected to, and ann still submits and is graded. Her folder is a small
file system of its own, so the kernel refuses a move or hard link into it from elsewhere
(EXDEV), as it refuses hard links of others' files (``protected_hardlinks``): such a
variant is skipped, the others still run."""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socketserver
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import requests

from deploy.hub import learner_net
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.test_attacks import SYSTEM_PYTHON, as_user, start_server, stop_server
from tests.hub.test_learner_network import server_target

WAIT_S = 600  # give-up time for servers, not a timing assertion
TAG = secrets.token_hex(4)

# As eve: put at argv[1] a "symlink", "hardlink", "rename" (moved there) of argv[3], or a
# regular "file"; "race" (argv[3] seconds) puts a symbolic link to each target after
# argv[3], a hard link of the last and a file, over and over (each atomically: made
# beside, then renamed over).
PLACE = r'''
import os, sys, time
where, how, targets = sys.argv[1], sys.argv[2], sys.argv[3:]

def place(how, target, name):
    tmp = name + ".new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    if how == "symlink":
        os.symlink(target, tmp)
    elif how == "hardlink":
        os.link(target, tmp)
    elif how == "rename":
        os.rename(target, tmp)
    else:
        open(tmp, "w").write("not a socket")
    os.rename(tmp, name)

if how != "race":
    try:
        place(how, targets[0], where)
    except OSError as err:  # a hard link of another's socket (protected_hardlinks), or a
        # link or move into her folder from another file system (EXDEV: it is a tmpfs)
        print("refused", err, flush=True)
        sys.exit(0)
    print("placed", flush=True)
    sys.exit(0)
until = time.monotonic() + float(targets[0])
kinds = [("symlink", t) for t in targets[1:]] + [("hardlink", targets[-1]), ("file", "")]
while time.monotonic() < until:
    for how, target in kinds:
        try:
            place(how, target, where)
        except OSError:
            time.sleep(0.001)  # her folder is not there yet (or already removed)
'''


class Decoy(socketserver.ThreadingUnixStreamServer):
    """An HTTP server on the UNIX socket ``path`` answering ``marker`` to anything,
    counting connections (``connections``)."""
    daemon_threads = True

    def __init__(self, path, marker, mode=0o666):
        self.marker, self.connections = marker, 0
        super().__init__(str(path), _Answer)
        os.chmod(path, mode)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def get_request(self):
        conn, _ = super().get_request()
        self.connections += 1
        return conn, ("unix", 0)


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = self.server.marker.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _origin(hub, name, session):
    """``GET /user/<name>/api`` on ``name``'s own origin through the proxy: (status, text)."""
    reply = session.get(f"http://127.0.0.1:{hub.env['PORT']}/user/{name}/api",
                        headers={"Host": f"{name}.localhost:{hub.env['PORT']}"}, timeout=60,
                        allow_redirects=False)
    return reply.status_code, reply.text


def _her_own_or_none(hub, name, session, markers):
    """Three requests to ``name``'s origin on one kept-alive session: each answered by her
    JupyterLab (its ``/api``'s version) or not at all (502, 503, the hub's redirect while
    she has no server), never with a decoy's marker."""
    answers = [_origin(hub, name, session) for _ in range(3)]
    for status, text in answers:
        assert not any(m in text for m in markers), answers
        assert status != 200 or '"version"' in text, answers
    return answers


def _wait_settled(learner):
    """Until ``learner``'s server is ready (True) or none is starting any more (False)."""
    api = learner.hub.url(f"/hub/api/users/{learner.name}")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        server = learner.session.get(api, headers=learner.headers).json()["servers"].get("")
        if not server:
            return False
        if server["ready"]:
            return True
        time.sleep(0.5)
    raise AssertionError(f"{learner.name}'s server neither started nor gave up")


def test_no_socket_but_hers_is_reached_from_her_origin(hub, accounts, sign_in):
    ann, eve = sign_in("ada"), sign_in("bob")
    start_server(ann)
    start_server(eve)
    route = Path(server_target(hub, eve.name))
    root = route.parent.parent
    assert route.parent.name == learner_net.ROUTES, route  # routed to root's own folder only
    hers = root / eve.name / learner_net.SERVER_SOCK
    assert os.path.ismount(route)  # her socket's inode itself, bound where only root goes
    uid = pwd.getpwnam(eve.name).pw_uid

    private = Path(f"/run/course-test-{TAG}")  # root-only, as a system service's
    private.mkdir(mode=0o700)
    zygote = Path(tempfile.mkdtemp(prefix="zygote-"))  # as the grading sandbox's
    movable = Path(f"/run/course-test-open-{TAG}")  # a folder anybody may write in
    movable.mkdir()
    movable.chmod(0o777)
    decoys = {"root-only": Decoy(private / "root.sock", f"root-only-{TAG}", 0o600),
              "sandbox": Decoy(zygote / "socket", f"sandbox-{TAG}", 0o600),
              "open": Decoy(movable / "other.sock", f"open-{TAG}")}
    markers = [d.marker for d in decoys.values()]
    ann_route = Path(server_target(hub, ann.name))
    targets = [str(d.server_address) for d in decoys.values()] + [
        str(ann_route), str(root / ann.name / learner_net.SERVER_SOCK), str(root / "hub.sock")]
    session = requests.Session()
    try:
        assert _her_own_or_none(hub, eve.name, session, markers)[0][0] == 200  # pooled now
        # she cannot touch the route itself
        done = as_user(eve.name, SYSTEM_PYTHON, "-c", PLACE, str(route), "file", "")
        assert done.stdout.startswith("refused [Errno 13]"), done

        variants = [("symlink", t) for t in targets] + [
            ("hardlink", str(root / "hub.sock")), ("hardlink", targets[2]),
            ("rename", targets[2]), ("file", "")]
        for how, target in variants:
            done = as_user(eve.name, SYSTEM_PYTHON, "-c", PLACE, str(hers), how, target)
            if how in ("hardlink", "rename") and done.stdout.startswith("refused"):
                continue  # the kernel refused it here (protected_hardlinks, EXDEV)
            assert done.stdout.strip() == "placed", (how, target, done.stderr)
            answers = _her_own_or_none(hub, eve.name, session, markers)
            assert all(status == 200 for status, _ in answers), (how, target, answers)
            assert _her_own_or_none(hub, eve.name, requests.Session(), markers)
            if how == "rename":  # the moved socket back, for the next variants
                os.rename(hers, target)
            else:
                os.unlink(hers)
        # racing her server's start: each placement over and over while it starts
        stop_server(eve)
        race = subprocess.Popen(
            ["setpriv", f"--reuid={uid}", f"--regid={pwd.getpwnam(eve.name).pw_gid}",
             "--clear-groups", SYSTEM_PYTHON, "-c", PLACE, str(hers), "race", "60",
             *targets[:2], *targets[3:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            eve.session.post(hub.url(f"/hub/api/users/{eve.name}/server"), headers=eve.headers)
            started = _wait_settled(eve)
            _her_own_or_none(hub, eve.name, session, markers)
        finally:
            race.kill()
            race.wait()
        if started:
            assert not os.path.lexists(route) or os.lstat(route).st_uid == uid
        assert {n: d.connections for n, d in decoys.items()} == dict.fromkeys(decoys, 0)
        notebook = with_answer(released_notebook(Path(hub.env["GRADER_COURSE"])),
                               (SAMPLES / "reference.py").read_text())
        assert ann.wait_done(ann.submit(notebook))["result"]["score"] == 10
    finally:
        for decoy in decoys.values():
            decoy.shutdown()
            decoy.server_close()
        for folder in (private, zygote, movable):
            shutil.rmtree(folder, ignore_errors=True)
        stop_server(ann)
        if _wait_settled(eve):
            stop_server(eve)
