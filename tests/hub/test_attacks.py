"""One learner ("eve", here bob) against another ("ann", here ada) under ``make hub``:
a page eve serves from her own server, a process she leaves running, a port she
tries to take. Each attack is run as eve would run it; each must fail."""
from __future__ import annotations

import errno
import json
import os
import pwd
import re
import subprocess
import time
from pathlib import Path

import psutil

from tests.hub.test_class_browser import browser_sign_in

WAIT_S = 600  # give-up time for servers, not a timing assertion
SYSTEM_PYTHON = "/usr/bin/python3"  # a learner cannot run the venv's (it lives under /root)
HUB_PORTS = ("PORT", "HUB_API_PORT", "PROXY_API_PORT", "GRADER_PORT", "SITE_PORT")

EVIL_PAGE = """<!doctype html><html><body><script>
(async () => {
  const hub = %(hub)s, out = {origin: location.origin, cookies: document.cookie};
  const xsrf = decodeURIComponent((document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || "");
  try {
    const r = await fetch(hub + "/services/course/api/session",
                          {credentials: "include", headers: {"X-XSRFToken": xsrf}});
    out.status = r.status; out.body = await r.text();
  } catch (e) { out.session_error = String(e); }
  const frame = document.createElement("iframe");
  frame.src = hub + "/services/course/book/intro.html";
  frame.onload = () => {
    try { out.frame_cookies = frame.contentDocument.cookie; }
    catch (e) { out.frame_error = String(e); }
    document.body.setAttribute("data-out", JSON.stringify(out));
  };
  document.body.appendChild(frame);
})();
</script></body></html>
"""


def as_user(name, *argv, **kwargs):
    """``argv`` run as the system user ``name`` (its uid, gid and no other group)."""
    entry = pwd.getpwnam(name)
    return subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                           "--clear-groups", *argv], capture_output=True, text=True, **kwargs)


def start_server(learner):
    """Start ``learner``'s (a Signed) own server through the hub's API; wait until ready."""
    api = learner.hub.url(f"/hub/api/users/{learner.name}")
    learner.session.post(api + "/server", headers=learner.headers)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        server = learner.session.get(api, headers=learner.headers).json()["servers"].get("")
        if server and server["ready"]:
            return server
        time.sleep(1)
    raise AssertionError(f"{learner.name}'s server did not start")


def stop_server(learner):
    api = learner.hub.url(f"/hub/api/users/{learner.name}")
    learner.session.delete(api + "/server", headers=learner.headers)
    deadline = time.monotonic() + WAIT_S
    while learner.session.get(api, headers=learner.headers).json()["servers"].get(""):
        assert time.monotonic() < deadline, f"{learner.name}'s server did not stop"
        time.sleep(1)


def test_a_page_a_learner_serves_runs_on_her_own_origin(hub, accounts, browser, sign_in):
    """Eve's file under her labextensions folder is served by her server; ann opens the
    link. It runs on eve's origin, so it reads none of the hub's cookies and cannot
    fetch ann's hub token from the course site."""
    made, _ = accounts
    eve = sign_in("bob")
    server = start_server(eve)
    static = Path(os.path.expanduser(f"~{eve.name}")) / ".local/share/jupyter/labextensions/evil/static"
    page_text = EVIL_PAGE % {"hub": json.dumps(hub.public)}
    done = as_user(eve.name, SYSTEM_PYTHON, "-c",
                   "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
                   "p.mkdir(parents=True, exist_ok=True); (p / 'evil.html').write_text(sys.argv[2])",
                   str(static), page_text)
    assert done.returncode == 0, done.stderr
    assert not server["url"].startswith(hub.public + "/"), server["url"]  # an origin of its own

    ann = browser_sign_in(browser, hub, made["ada"])
    path = "lab/extensions/evil/static/evil.html"
    on_hub = ann.goto(hub.url(f"/user/{eve.name}/{path}"))  # the hub's origin serves no learner page
    assert on_hub.status == 404 and "data-out" not in ann.content(), on_hub.status
    ann.goto(server["url"] + path)  # the link as eve can send it: her server's own address
    ann.wait_for_function("() => document.body && document.body.hasAttribute('data-out')",
                          timeout=WAIT_S * 1000)
    out = json.loads(ann.locator("body").get_attribute("data-out"))
    assert out["origin"] != hub.public and re.match(rf"http://{re.escape(eve.name)}\.localhost", out["origin"]), out
    assert "_xsrf" not in out["cookies"] and "frame_cookies" not in out, out
    assert "token" not in out.get("body", ""), out
    ann.context.close()
    stop_server(eve)


def test_no_learner_process_outlives_her_server(hub, accounts, sign_in):
    eve = sign_in("bob")
    start_server(eve)
    uid = pwd.getpwnam(eve.name).pw_uid
    left = as_user(eve.name, "sh", "-c", "setsid nohup sleep 3600 >/dev/null 2>&1 & echo $!")
    stray = int(left.stdout.strip())
    assert psutil.pid_exists(stray)
    stop_server(eve)
    deadline = time.monotonic() + 60
    while [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]:
        assert time.monotonic() < deadline, "a process of the learner outlived her server"
        time.sleep(0.2)


def test_no_learner_can_listen_on_a_port_of_the_hub(hub):
    """Every fixed port of make hub is privileged: a learner's bind is refused outright
    (EACCES), whether or not the hub's own process is listening there right now."""
    code = ("import socket, sys\n"
            "for port in sys.argv[1:]:\n"
            "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "    try: s.bind(('127.0.0.1', int(port))); print(port, 'bound')\n"
            "    except OSError as e: print(port, e.errno)\n")
    done = as_user("nobody", SYSTEM_PYTHON, "-c", code, *(hub.env[k] for k in HUB_PORTS))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [w for k in HUB_PORTS for w in (hub.env[k], str(errno.EACCES))]
    assert "WARNING" not in hub.log()  # the hub warns about an unprivileged port


def test_a_learner_server_gains_no_privileges_and_keeps_its_ipc(hub, accounts, sign_in):
    """Her server runs with no_new_privs (a setuid program she starts keeps her uid) and
    in an IPC namespace of its own (System V shared memory she leaves goes with it)."""
    eve = sign_in("bob")
    start_server(eve)
    uid = pwd.getpwnam(eve.name).pw_uid
    servers = [p for p in psutil.process_iter(["uids", "pid"])
               if p.info["uids"] and p.info["uids"].real == uid]
    checked = 0
    for proc in servers:
        try:  # a process of hers may end meanwhile (a kernel's helper): nothing to check
            status = Path(f"/proc/{proc.pid}/status").read_text()
            ipc = os.readlink(f"/proc/{proc.pid}/ns/ipc")
        except FileNotFoundError:
            continue
        assert re.search(r"^NoNewPrivs:\s+1$", status, re.M), (proc.pid, status)
        assert ipc != os.readlink("/proc/self/ns/ipc")
        checked += 1
    assert checked
    stop_server(eve)
