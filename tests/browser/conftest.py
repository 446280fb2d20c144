"""The course site and the learner JupyterLab in a real browser (Debian's Chromium).

One session builds the site (the strict, incremental build ``make book`` runs),
serves ``_build/html`` on a free port, starts the learner JupyterLab exactly as
``make serve`` does (scripts/jupyter_local.py) on another free port with a
private workspace and a random token, and launches one headless Chromium through
Playwright. Pages are opened with ``?jupyter=<url>&token=<token>`` so they talk
to that JupyterLab. Screenshots go to ``_build/screenshots/``.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest

from tests.book.sitebuild import HTML, REPO, build_book

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = REPO / "_build" / "screenshots"
WAIT_S = 600  # give-up time for servers to answer, not a timing assertion

sys.path.insert(0, str(REPO / "scripts"))
import jupyter_local  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with status {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=10)
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{what} did not answer at {url}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Servers:
    def __init__(self, site: str, jupyter: str, token: str, workspace: Path):
        self.site, self.jupyter, self.token, self.workspace = site, jupyter, token, workspace

    def url(self, rel: str) -> str:
        """The site page ``rel`` with the learner JupyterLab's address and token."""
        return f"{self.site}{rel}?jupyter={quote(self.jupyter, safe='')}&token={quote(self.token, safe='')}"


@pytest.fixture(scope="session")
def built_html() -> Path:
    result = build_book(REPO)
    if result.returncode != 0:
        pytest.fail(f"the strict site build failed:\n{(result.stdout + result.stderr)[-6000:]}")
    return HTML


@pytest.fixture(scope="package")
def servers(built_html, tmp_path_factory):
    site_port, jupyter_port = free_port(), free_port()
    site = f"http://127.0.0.1:{site_port}"
    web = subprocess.Popen([sys.executable, "-m", "http.server", str(site_port), "--bind", "127.0.0.1",
                            "--directory", str(built_html)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = tmp_path_factory.mktemp("jupyter")
    workspace = base / "workspace"
    jupyter_local.build_workspace(workspace, lessons=built_html / "_notebooks" / "lessons")
    token = secrets.token_urlsafe(16)
    argv, env, cwd = jupyter_local.server_command(jupyter_port, site, token, workspace=workspace,
                                                  config_dir=base / "config")
    log = open(base / "jupyter.log", "wb")
    lab = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(site + "/", web, "the static site server")
        jupyter = f"http://127.0.0.1:{jupyter_port}"
        wait_for(f"{jupyter}/api/status?token={token}", lab, "the learner JupyterLab")
        yield Servers(site + "/", jupyter, token, workspace)
    finally:
        stop(lab)
        stop(web)
        log.close()


@pytest.fixture(scope="package")  # one browser for tests/browser, closed before other packages run
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is missing: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


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
