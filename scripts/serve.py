"""Start the course's local servers, print their URLs once they answer, stop them all on Ctrl-C.

Used by ``make serve``. Each server is one child process whose output goes to
``_build/logs/<name>.log``: the terminal shows the URLs, printed last and only
once every server answers, and stays quiet afterwards unless a server stops (then
the end of its log is shown and the others are stopped too, so a half-running
course never lingers).

Ports come from the environment, defaults from autograder/defaults.py: PORT
(site), GRADER_PORT (grading service; see autograder/SERVICE.md for its settings),
JUPYTER_PORT (learner JupyterLab; see scripts/jupyter_local.py), and HOST.
"""
from __future__ import annotations

import getpass
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

from autograder import defaults  # the course's one set of defaults
from autograder.defaults import CHECKOUT as REPO, GRADER_PORT, setting
from scripts import jupyter_local  # the learner JupyterLab
from scripts.stopping import STOPPING, http_status, ignore_stop_signals, on_stop_signals

LOGS = REPO / "_build" / "logs"
HOST = setting("HOST")
LANDING = "book/intro.html"
READY_S = 600  # give-up time for a server to answer (JupyterLab's first start is slow on a busy machine)


class Server(NamedTuple):
    name: str        # its log is _build/logs/<name>.log
    label: str       # what the terminal calls it
    url: str         # what the terminal prints
    ready: str       # answers 200 once the server is up
    argv: list
    env: dict


def _die_with_parent():
    """In each server, before it runs: SIGTERM it when serve.py dies, however it dies
    (Linux's PR_SET_PDEATHSIG; serve.py is single-threaded, so its thread is the
    parent). A serve.py killed outright (SIGKILL, an OOM kill) leaves no server behind."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _stop_all(running):
    """SIGTERM each server's process group, wait up to 10 s each, then SIGKILL.
    Signals are ignored meanwhile (also when no signal started the cleanup)."""
    ignore_stop_signals()
    for _, proc in running:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for _, proc in running:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def grader_port():
    return setting("GRADER_PORT")


def grader_url():
    """The grading service's address, as the pages and notebooks need it."""
    return defaults.grader_url(HOST)


def jupyter_url():
    """The learner JupyterLab's address, without its token (it listens on loopback only)."""
    return f"http://127.0.0.1:{setting('JUPYTER_PORT')}"


def learner_id() -> str:
    """The one learner of this one-person deployment: $GRADER_LEARNER, else the
    operating-system user. The grading service is started for this id alone
    (``--auth local``): the pages and the notebooks' submit cells submit as it by
    holding :func:`grader_key`, never by naming it; a class deployment takes it from sign-in."""
    return setting("GRADER_LEARNER") or getpass.getuser()


def grader_key() -> str:
    """The key to the grading service for this run: $GRADER_TOKEN, else a new random one.

    The service takes requests holding it as :func:`learner_id` and no one else's
    (``--auth local``, autograder/service/api/local_auth.py); the pages get it in the printed
    site URL, the submit cells in JupyterLab's kernels' environment. Never written to a
    file the site serves."""
    return setting("GRADER_TOKEN") or secrets.token_urlsafe(24)


def site_url(token: str, learner: str, key: str | None = None) -> str:
    """The landing page itself, not the root: the root's meta-refresh drops the
    query string that hands the pages the JupyterLab token, the learner id, the
    grading service's ``key`` (:func:`grader_key`) and a moved grading service."""
    site_port, jupyter_port = setting("PORT"), setting("JUPYTER_PORT")
    query = jupyter_local.site_query(jupyter_port, token) + "&learner=" + quote(learner, safe="")
    if key:
        query += "&grader_token=" + quote(key, safe="")
    if grader_port() != str(GRADER_PORT):  # the pages' default (window.COURSE_DEFAULTS)
        query += "&grader=" + quote(grader_url(), safe="")
    return f"http://{HOST}:{site_port}/{LANDING}" + query


# Read by the pages (course-run.js, grader.js) when opened without the printed query
# string: the servers' addresses and the learner, never the token (any local client can
# read what the site serves; the token stays in the printed URL and JupyterLab's config).
LOCAL_JSON = REPO / "_build" / "html" / "_static" / "course-local.json"


def write_local_json(learner: str) -> tuple[str, str]:
    """:data:`LOCAL_JSON` for this run: ``{"jupyter", "grader", "learner", "sitePort"}``
    (URLs, an id, and the port of the site server whose pages it is for).

    Returns ``(before, written)``: what was there (``"{}"`` when nothing) and what this
    run wrote, for :func:`restore_local_json`.
    """
    LOCAL_JSON.parent.mkdir(parents=True, exist_ok=True)
    before = LOCAL_JSON.read_text() if LOCAL_JSON.exists() else "{}\n"
    written = json.dumps({"jupyter": jupyter_url(),
                          "grader": grader_url(), "learner": learner,
                          "sitePort": str(setting("PORT"))})
    LOCAL_JSON.write_text(written)
    return before, written


def restore_local_json(before: str, written: str) -> None:
    """Put back what :func:`write_local_json` found, unless another run has written since:
    a make serve started while another runs (on other ports) and stopped first leaves
    the pages to the one still running, and the last one stopped leaves ``{}``. What
    it found is put back only while that run's site still answers: one that stopped
    meanwhile would leave the pages sending work to servers that are gone."""
    if LOCAL_JSON.exists() and LOCAL_JSON.read_text() == written:
        LOCAL_JSON.write_text(before if _site_listens(before) else "{}\n")


def _site_listens(local: str) -> bool:
    """Whether the site server a course-local.json text names still accepts connections."""
    try:
        port = int(json.loads(local).get("sitePort"))
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except (ValueError, TypeError, AttributeError, OSError):
        return False


def services(token: str, learner: str, key: str | None = None) -> list[Server]:
    """Every server ``make serve`` runs; JupyterLab gets ``token`` (and only it). With
    ``key`` the grading service serves ``learner`` alone, to whoever holds the key
    (``--auth local``); JupyterLab's kernels get it for the submit cells."""
    site_port, jupyter_port = setting("PORT"), setting("JUPYTER_PORT")
    base = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "GRADER_TOKEN")}
    lab = jupyter_url()
    local = (["--auth", "local"], dict(GRADER_LEARNER=learner, GRADER_TOKEN=key)) if key else ([], {})
    return [
        Server("grader", "grading service", f"{grader_url()}/api/health", f"{grader_url()}/api/health",
               [sys.executable, "-m", "autograder.service", "--host", HOST, "--port", grader_port(),
                *local[0]],
               dict(base, **local[1])),
        # The kernels read GRADER_URL, GRADER_LEARNER and GRADER_TOKEN (the submit cells)
        # and never see JupyterLab's token: jupyter_local.py writes it to the server's config file.
        Server("jupyterlab", "learner JupyterLab", jupyter_local.lab_url("127.0.0.1", jupyter_port, token),
               f"{lab}/api/status?token={quote(token, safe='')}",
               [sys.executable, str(REPO / "scripts" / "jupyter_local.py"), "serve", "--port", jupyter_port],
               dict(base, JUPYTER_TOKEN=token, GRADER_URL=grader_url(), GRADER_LEARNER=learner,
                    **({"GRADER_TOKEN": key} if key else {}))),
        Server("site", "course site", site_url(token, learner, key), f"http://{HOST}:{site_port}/{LANDING}",
               [sys.executable, "-m", "http.server", site_port, "--bind", HOST,
                "--directory", str(REPO / "_build" / "html")],
               base),
    ]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in text[-lines:])


def _report_exit(server: Server, proc: subprocess.Popen) -> None:
    log = LOGS / f"{server.name}.log"
    print(f"==> the {server.label} stopped (exit status {proc.returncode}); the end of "
          f"{log.relative_to(REPO)}:\n{_tail(log)}", file=sys.stderr, flush=True)


def wait_until_ready(running, parent: int) -> bool:
    """True once every server answers; False (after saying why) if one exits or never answers."""
    waiting = list(running)
    deadline = time.monotonic() + READY_S
    while waiting:
        for server, proc in list(waiting):
            if proc.poll() is not None:
                _report_exit(server, proc)
                return False
            status = http_status(server.ready)
            if status == 200:
                waiting.remove((server, proc))
            elif status is not None:  # up, but refusing: e.g. JupyterLab and another token
                print(f"==> the {server.label} answered HTTP {status} at {server.ready}; see "
                      f"_build/logs/{server.name}.log", file=sys.stderr, flush=True)
                return False
        if os.getppid() != parent or STOPPING.is_set():
            return False
        if waiting and time.monotonic() > deadline:
            for server, _ in waiting:
                print(f"==> the {server.label} did not answer at {server.ready} within {READY_S} s; "
                      f"see _build/logs/{server.name}.log", file=sys.stderr, flush=True)
            return False
        time.sleep(0.3)
    return True


def main():
    on_stop_signals()
    parent = os.getppid()
    token, learner, key = jupyter_local.token(), learner_id(), grader_key()
    LOGS.mkdir(parents=True, exist_ok=True)
    running, status, local = [], 0, None
    try:
        local = write_local_json(learner)
        for server in services(token, learner, key):
            if STOPPING.is_set():
                break
            with open(LOGS / f"{server.name}.log", "wb") as log:
                running.append((server, subprocess.Popen(
                    server.argv, cwd=REPO, start_new_session=True, env=server.env,
                    preexec_fn=_die_with_parent,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)))
        if not wait_until_ready(running, parent):
            return 0 if STOPPING.is_set() else 1
        print(f"==> the course is running as learner {learner!r} "
              f"(servers' logs in _build/logs/; Ctrl-C stops them all)", flush=True)
        for server, _ in running:
            print(f"==> {server.label}: {server.url}", flush=True)
        # Stop too when whoever started us (make) is gone: no orphaned servers.
        while all(p.poll() is None for _, p in running) and os.getppid() == parent \
                and not STOPPING.is_set():
            time.sleep(0.5)
        for server, proc in running:
            if proc.poll() is not None and not STOPPING.is_set():
                _report_exit(server, proc)
                status = 1
    finally:
        if STOPPING.is_set():
            print("\n==> stopping", flush=True)
        _stop_all(running)
        if local:  # no page should look for servers that are gone
            restore_local_json(*local)
    return status


if __name__ == "__main__":
    sys.exit(main())
