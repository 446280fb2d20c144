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

import re
import subprocess
import sys
import threading
import time

import pytest

from tests.browser.pages import Watched
from tests.browser.servers import WAIT_S, Servers, serve_environment
from tests.course import REPO
from tests.processes import free_port, stop_process


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
        stop_process(proc)


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
