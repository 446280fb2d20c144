"""Pages in the browser tests' Chromium: what went wrong on one (:class:`Watched`),
JupyterLab's "File Changed" dialog answered, screenshots (in ``_build/screenshots/``)
and axe-core's accessibility violations."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.course import REPO

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = REPO / "_build" / "screenshots"


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


def fail_on_other_dialogs(lab, name: str) -> None:
    """End the page at once when JupyterLab shows a dialog other than "File Changed",
    printing its text (pytest shows it with the failure) and saving a screenshot
    (``name``): a dialog blocks every later click, and without this the test would wait
    its whole timeout and say only that a click was intercepted. (An exception raised in
    a locator handler does not reach the blocked action; closing the page does.) For a
    page where no other dialog is expected (Validate's is)."""
    other = lab.locator(".jp-Dialog").filter(has_not_text="has changed on disk")

    def unexpected(dialog):
        print(f"JupyterLab showed a dialog: {dialog.inner_text()!r} (screenshot {name}.png)")
        screenshot(lab, name, failed=True)
        lab.close()
    lab.add_locator_handler(other, unexpected)


# Screenshots are for a person looking the site over (COURSE_SCREENSHOTS=all) and for a
# failure; a full-page one costs Chromium up to a second, so a passing run takes none.
EVERY_SHOT = os.environ.get("COURSE_SCREENSHOTS") == "all"


def screenshot(page, name: str, *, failed: bool = False) -> Path | None:
    """Save ``page`` (a page: all of it; a locator: that element) as
    ``_build/screenshots/<name>.png`` when ``failed`` or with COURSE_SCREENSHOTS=all:
    its path, else None."""
    if not (failed or EVERY_SHOT):
        return None
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
