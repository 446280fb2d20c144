"""Debian's Chromium, driven by Playwright, as one browser the session shares (the
``chromium`` and ``browser`` fixtures of tests/conftest.py hand it out).

The browser is Debian's ``chromium-headless-shell``: Chromium's headless shell, built
from the same source as Debian's ``chromium`` and the browser Playwright itself runs
for headless tests. It spends about a third less CPU than the full browser in its new
headless mode (tests/browser on 2 cores: 75 s of CPU against 119 s, same results)."""
import os

import pytest

CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


class SharedChromium:
    """Debian's Chromium driven by Playwright: launched by the first test that asks for
    it and kept for the tests that follow and use it too (tests/browser, tests/hub and
    tests/service share one browser); closed before the next test that does not use it
    (tests/conftest.py: ``pytest_runtest_setup``), which keeps the rule true in any order
    and on any ``make test`` worker. Not kept open longer: while Playwright's sync API is
    started it marks the thread's asyncio loop as running, and ``asyncio.run`` in an
    in-process test would refuse to start."""

    def __init__(self):
        self.playwright = self.browser = None

    def get(self):
        if self.browser is None:
            if not os.path.exists(CHROMIUM):
                pytest.fail("Chromium's headless shell is missing: "
                            "apt-get install -y chromium-headless-shell (.ci/run does)")
            from playwright.sync_api import sync_playwright

            self.playwright = sync_playwright().start()
            try:
                self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM,
                                                               args=CHROMIUM_ARGS)
            except BaseException:
                self.close()
                raise
        return self.browser

    def close(self):
        if self.browser is not None:
            self.browser.close()
        if self.playwright is not None:
            self.playwright.stop()
        self.playwright = self.browser = None
