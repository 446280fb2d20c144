"""Start the course's local servers, print their URLs, stop them all on Ctrl-C.

Used by ``make serve``. Each service is one child process; if one exits, the
others are stopped too, so a half-running course never lingers.
Ports come from the environment: PORT (site, default 8000), GRADER_PORT
(grading service, default 8001; see autograder/SERVICE.md for its settings),
JUPYTER_PORT (learner JupyterLab, default 8888; see scripts/jupyter_local.py).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import jupyter_local  # scripts/jupyter_local.py: the learner JupyterLab

REPO = Path(__file__).resolve().parent.parent
HOST = os.environ.get("HOST", "127.0.0.1")
LANDING = "book/intro.html"
DEFAULT_GRADER_PORT = "8001"  # also the default of book/_static/grader.js and the submit cells


def _stop(signum, _frame):
    raise KeyboardInterrupt  # SIGTERM and SIGHUP clean up exactly like Ctrl-C


def grader_port():
    return os.environ.get("GRADER_PORT", DEFAULT_GRADER_PORT)


def grader_url():
    """The grading service's address, as the pages and notebooks need it."""
    return f"http://{HOST}:{grader_port()}"


def services():
    """``[(label, url, argv)]`` for every server ``make serve`` runs."""
    site_port = os.environ.get("PORT", "8000")
    jupyter_port = os.environ.get("JUPYTER_PORT", str(jupyter_local.DEFAULT_PORT))
    query = jupyter_local.site_query(jupyter_port)
    if grader_port() != DEFAULT_GRADER_PORT:
        query += "&grader=" + quote(grader_url(), safe="")
    return [
        # The landing page itself, not the root: the root's meta-refresh drops the
        # query string that hands the pages the JupyterLab token.
        ("course site", f"http://{HOST}:{site_port}/{LANDING}" + query,
         [sys.executable, "-m", "http.server", site_port, "--bind", HOST,
          "--directory", str(REPO / "_build" / "html")]),
        ("grading service", f"{grader_url()}/api/health",
         [sys.executable, "-m", "autograder.service", "--host", HOST, "--port", grader_port()]),
        ("learner JupyterLab", jupyter_local.lab_url("127.0.0.1", jupyter_port, jupyter_local.token()),
         [sys.executable, str(REPO / "scripts" / "jupyter_local.py"), "serve", "--port", jupyter_port]),
    ]


def child_env():
    """The servers' environment: JupyterLab's kernels get the grading service's
    address as GRADER_URL, which the notebooks' submit cells read (their
    default is http://127.0.0.1:8001)."""
    return dict(os.environ, GRADER_URL=grader_url())


def main():
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    parent = os.getppid()
    procs = []
    env = child_env()
    for label, url, argv in services():
        procs.append((label, subprocess.Popen(argv, cwd=REPO, start_new_session=True, env=env,
                                              stdout=subprocess.DEVNULL)))
        print(f"==> {label}: {url}", flush=True)
    print("==> press Ctrl-C to stop", flush=True)
    try:
        # Stop too when whoever started us (make) is gone: no orphaned servers.
        while all(p.poll() is None for _, p in procs) and os.getppid() == parent:
            time.sleep(0.5)
        for label, p in procs:
            if p.poll() is not None:
                print(f"==> {label} exited with status {p.returncode}; stopping the rest")
    except KeyboardInterrupt:
        print("\n==> stopping")
    finally:
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for _, p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
