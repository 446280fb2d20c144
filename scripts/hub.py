"""Start JupyterHub for a class (``make hub``), say its URL once the course site and
the grading service both answer through its proxy, stop it on Ctrl-C.

The hub runs in this process group, so a Ctrl-C reaches it directly; SIGTERM and
SIGHUP are passed on. Once it has stopped (and its learners' servers with it), its
socket folder under ``/run/course-hub`` is removed, unless another hub answers there.
The hub's log is the terminal's, as JupyterHub prints it.
Configuration: ``deploy/hub/jupyterhub_config.py``; ports and the hub's domain come
from the environment, defaults from ``autograder.defaults.HUB_ENVIRONMENT``.
"""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, hub_public_url, hub_setting
from deploy.hub.learner_net import socket_folder
from scripts.stopping import STOPPING, http_status, on_stop_signals

READY_S = 900  # give-up time for the services (the grader imports JAX first)


def answered(path: str, want) -> bool:
    """Whether ``path`` answers through the proxy as ``want(status, location)`` says (asked
    on loopback with the hub's own Host header: the proxy routes by host)."""
    port, host = hub_setting("PORT"), hub_public_url().split("://", 1)[1]
    status = http_status(f"http://127.0.0.1:{port}{path}", host)
    return status is not None and want(status)


def ready() -> bool:
    """The grading service answers its health check, and the course site (not the hub
    standing in for it) answers a page: with the redirect into the hub's sign-in."""
    return answered("/services/grader/api/health", lambda s: s == 200) and \
        answered("/services/course/book/intro.html", lambda s: s == 302)


def running_message(public: str, auth: str) -> str:
    """What ``make hub`` says once it answers: its URL and how people sign in (``auth``:
    ``HUB_AUTH``); under LTI, the tool's URLs to register in the LMS."""
    if auth != "lti":
        return (f"==> the course hub is running: {public}/ (sign in with an account of this "
                "machine; Ctrl-C stops it)")
    return (f"==> the course hub is running: {public}/ (sign in by a launch from the LMS; "
            "Ctrl-C stops it)\n"
            "==> register the course in the LMS as an LTI 1.3 tool with:\n"
            f"    login initiation URL: {public}/hub/lti13/oauth_login\n"
            f"    redirect (launch) URL: {public}/hub/lti13/oauth_callback\n"
            f"    public key set (JWKS) URL: {public}/services/grader/api/lti/jwks\n"
            f"    target link URI: {public}/services/course/")


def answers(path: Path) -> bool:
    """Whether a process listens on the UNIX socket ``path``."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def remove_sockets(folder: Path) -> bool:
    """Remove the stopped hub's socket ``folder`` (its ``hub.sock``, ``grader.sock`` and
    learners' folders), unless a hub still answers on one of its two (another ``make
    hub`` on the same state folder, which this one could not replace). Whether removed."""
    if not folder.is_dir() or any(answers(folder / n) for n in ("hub.sock", "grader.sock")):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def already_served() -> str | None:
    """What a hub started now would find taken (another ``make hub``, or anything else
    listening on the hub's own API port, or a hub answering on this state folder's
    sockets), in words; None when nothing is. Asked before starting: once started,
    :func:`ready` would read the other hub's answers as this one's. Not the public port:
    a proxy a stopped hub of this state left running holds it, and the new hub stops that
    proxy itself (``deploy/hub/proxy.py``)."""
    port = int(hub_setting("HUB_API_PORT"))
    with socket.socket() as probe:
        probe.settimeout(2)
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return f"something already listens on the hub's port {port} (another make hub?)"
    folder = socket_folder(hub_setting("HUB_STATE"))
    if any(answers(folder / n) for n in ("hub.sock", "grader.sock")):
        return f"a hub of this state folder already answers in {folder}"
    return None


def main() -> int:
    on_stop_signals()
    taken = already_served()
    if taken:
        print(f"==> not started: {taken}; stop it first, or give this one other ports "
              "(PORT, HUB_API_PORT, ...) and HUB_STATE",
              file=sys.stderr, flush=True)
        return 1
    hub = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                            str(REPO / "deploy" / "hub" / "jupyterhub_config.py")])
    deadline, said = time.monotonic() + READY_S, False
    while hub.poll() is None:
        if STOPPING.is_set():
            hub.send_signal(signal.SIGTERM)  # (a Ctrl-C reached it already; SIGTERM is the same)
            break
        if not said and ready():
            print(running_message(hub_public_url(), hub_setting("HUB_AUTH")), flush=True)
            said = True
        elif not said and time.monotonic() > deadline:
            print(f"==> the course site or the grading service did not answer through the hub "
                  f"within {READY_S} s; see the hub's log above", file=sys.stderr, flush=True)
            said = True
        time.sleep(0.5)
    code = hub.wait()
    remove_sockets(socket_folder(hub_setting("HUB_STATE")))
    return code


if __name__ == "__main__":
    sys.exit(main())
