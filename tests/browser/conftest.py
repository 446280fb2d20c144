"""The course site and the learner JupyterLab in a real browser (Debian's Chromium).

After the session's site build (``built_site`` in tests/conftest.py: the strict,
incremental build ``make book`` runs), this package starts the course as ``make serve``
does (``scripts/serve.py``, with only the README's PORT, GRADER_PORT and JUPYTER_PORT
set, to free ports), reading the addresses and the token from what it prints. Pages are
opened with the query the printed site URL carries, as a learner's first visit does, in
the session's one headless Chromium (``browser``, tests/conftest.py), driven through
Playwright. Screenshots go to ``_build/screenshots/``.
tests/browser/test_make_serve.py follows ``make serve`` itself on the default ports.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse, urlsplit

import pytest

from tests.book.sitebuild import REPO

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = REPO / "_build" / "screenshots"
WAIT_S = 600  # give-up time for servers to answer, not a timing assertion


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Servers:
    """The running course: its printed addresses, the token, the learner workspace."""

    def __init__(self, printed: dict[str, str]):
        site = urlsplit(printed["course site"])
        self.site = f"{site.scheme}://{site.netloc}/"
        self.query = site.query  # token, learner, and the moved JupyterLab and grading service
        self.token = parse_qs(site.query)["token"][0]
        self.learner = parse_qs(site.query)["learner"][0]
        lab = urlsplit(printed["learner JupyterLab"])
        self.jupyter = f"{lab.scheme}://{lab.netloc}"
        self.grader = printed["grading service"].split("/api/")[0]
        self.workspace = REPO / "_build" / "workspace"

    def url(self, rel: str) -> str:
        """The site page ``rel`` with the printed site URL's query."""
        return f"{self.site}{rel}?{self.query}"


def serve_environment(**ports: int) -> dict:
    """The environment make's serve recipe gives scripts/serve.py: the caller's, with the
    venv on PATH and the ports (README: PORT=9000 make serve); no token, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_TOKEN", "PYTHONPATH", "HOST", "PORT", "JUPYTER_PORT")
           and not k.startswith("GRADER_")}
    env.update({k: str(v) for k, v in ports.items()}, HOST="127.0.0.1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@pytest.fixture(scope="package")
def servers(built_site):
    env = serve_environment(PORT=free_port(), GRADER_PORT=free_port(), JUPYTER_PORT=free_port())
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "serve.py")], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stdout),
                     daemon=True).start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not any("==> course site:" in line for line in lines):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("scripts/serve.py did not print its URLs:\n" + "\n".join(lines))
            time.sleep(0.2)
        yield Servers(dict(re.findall(r"==> (course site|grading service|learner JupyterLab): (\S+)",
                                      "\n".join(lines))))
    finally:
        stop(proc)


class Watched:
    """A page plus everything that went wrong on it: console errors, uncaught
    exceptions, failed requests, HTTP errors, and any request off this machine."""

    def __init__(self, page):
        self.page = page
        self.problems: list[str] = []
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text} (at {m.location.get('url')})")
                if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed request: {r.url} ({r.failure})"))
        page.on("response", lambda r: self.problems.append(f"HTTP {r.status}: {r.url}")
                if r.status >= 400 else None)
        page.on("request", self._local_only)

    def _local_only(self, request):
        parsed = urlparse(request.url)
        if parsed.scheme in ("data", "blob", "about"):
            return
        if parsed.hostname not in ("127.0.0.1", "localhost"):
            self.problems.append(f"request off this machine: {request.url}")


@pytest.fixture
def open_page(browser):
    """``open_page(url, width=1280, dark=False)`` -> Watched page in a fresh context."""
    contexts = []

    def _open(url: str, width: int = 1280, dark: bool = False, wait: str = "networkidle") -> Watched:
        height = 900 if width >= 800 else 844
        context = browser.new_context(viewport={"width": width, "height": height},
                                      color_scheme="dark" if dark else "light",
                                      device_scale_factor=1, is_mobile=width < 800, has_touch=width < 800)
        contexts.append(context)
        watched = Watched(context.new_page())
        watched.page.goto(url, wait_until=wait)
        return watched

    yield _open
    for context in contexts:
        context.close()


def overwrite_on_conflict(lab) -> None:
    """Answer JupyterLab's "File Changed" question with Overwrite, whenever it shows.

    A save that finds the file newer on disk than JupyterLab last saw asks whether to
    overwrite it or revert to it; on a loaded machine its own autosave's reply can still be
    on its way when Ctrl+S saves again (seen once in make test). The editor holds what
    the test typed, so a learner keeps it: Overwrite (Playwright's add_locator_handler
    answers the dialog before any later action on the page)."""
    conflict = lab.locator(".jp-Dialog", has_text="has changed on disk")
    lab.add_locator_handler(conflict, lambda dialog: dialog.get_by_role(
        "button", name="Overwrite").click())


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if hasattr(page, "goto"):
        page.screenshot(path=str(path), full_page=True)
    else:  # a locator: just that element
        page.screenshot(path=str(path))
    return path


def axe_violations(page) -> list[dict]:
    """Serious and critical axe-core violations on ``page`` (axe injected from node_modules)."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `npm ci` (make test does)")
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + n.failureSummary)}));
    }""")
    return [v for v in result if v["impact"] in ("serious", "critical")]
