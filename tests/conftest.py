"""Shared fixtures and commands: paths, the tiers, nbgrader and the grader's command
line as the README runs them, and what several packages need once per session: a
released copy of the nbgrader course, the site build, and Debian's Chromium."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.defaults import release_argv
from tests import tiers

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help="run only the fast tier: tests in none of pytest.ini's slow tiers")


def pytest_collection_modifyitems(config, items):
    """Mark each test with the slow tiers it starts (tests/tiers.py; pytest.ini lists them)."""
    tiers.mark(config, items, pytest)


def pytest_xdist_make_scheduler(config, log):
    """``make test``'s workers (``-n auto``) take whole groups (:func:`tiers.group_of`).
    A scheduler of our own rather than ``--dist loadgroup``: with pytest 9.2 that mode
    no longer sees ``xdist_group`` marks (pytest-dev/pytest-xdist#1386) and spreads a
    module's tests over workers, each making the module's fixtures again."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return tiers.group_of(nodeid)

    return GroupScheduling(config, log)


def nbgrader_env():
    """The environment of someone following the README: the venv's tools on PATH (its
    ``PATH=../.venv/bin:$PATH``) and nothing else added. In particular no PYTHONPATH:
    the hidden cells import the repository through exercises/nbgrader_config.py, as
    they must for an instructor's ``cd exercises; nbgrader autograde``."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def quiet(args):
    """``--log-level=ERROR`` unless ``args`` set a level (nbgrader refuses two)."""
    return [] if any(a.startswith("--log-level") for a in args) else ["--log-level=ERROR"]


def nbgrader(course, *args):
    """Run ``nbgrader ARGS`` as the README does, from ``exercises/`` (so its
    nbgrader_config.py is the one loaded), on the course files in ``course``
    (``--CourseDirectory.root``: tests never write into ``exercises/``).
    Returns the CompletedProcess (checked)."""
    return subprocess.run([str(BIN / "nbgrader"), *args, f"--CourseDirectory.root={course}",
                           *quiet(args)], cwd=REPO / "exercises",
                          env=nbgrader_env(), check=True, capture_output=True, text=True)


def release(course, assignment, *extra):
    """``make release``'s nbgrader command (:func:`autograder.defaults.release_argv`)
    for ``assignment`` in ``course``, through :func:`nbgrader`."""
    return nbgrader(course, *release_argv(assignment)[1:], *extra)


def grader_cli(*args, cwd=REPO, env=None, timeout=600, wait=True):
    """``python -m autograder ARGS`` as the README runs it: from the repository's root,
    in the README's environment (:func:`nbgrader_env`, plus ``env``). Returns the
    CompletedProcess (text output captured, not checked), or with ``wait=False`` the
    running Popen (stdout and stderr piped)."""
    argv = [sys.executable, "-m", "autograder", *map(str, args)]
    environment = dict(nbgrader_env(), **(env or {}))
    if not wait:
        return subprocess.Popen(argv, cwd=cwd, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=timeout)


def copy_course(course, target):
    """A private copy of ``course`` at ``target``, for a test that writes into it:
    the shared course stays as released, so every test passes alone and in any order."""
    shutil.copytree(course, target)
    return target


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """``exercises/source`` after ``nbgrader generate_assignment`` of every exercise, in a
    temporary course folder, with an empty gradebook that knows every graded cell.
    Shared and read-only: copy it (:func:`copy_course`) to write."""
    course = tmp_path_factory.mktemp("course")
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)  # as in exercises/
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    # One nbgrader process for all of them (its assignment id is a glob over source/):
    # the same release as one command per exercise, one interpreter start instead of one per exercise.
    release(course, "*")
    return course


@pytest.fixture(scope="session")
def built_site() -> Path:
    """The course site, built (or brought up to date) once per session with the strict,
    incremental command ``make book`` uses; fails with the build's log if it breaks.
    Returns ``_build/html``."""
    from tests.book.sitebuild import HTML, build_book

    result = build_book(REPO)
    if result.returncode != 0:
        pytest.fail(f"the strict site build failed:\n{(result.stdout + result.stderr)[-6000:]}")
    assert (HTML / "index.html").exists(), "the build produced no index.html"
    return HTML


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


class SharedChromium:
    """Debian's Chromium driven by Playwright: launched by the first test that asks for
    it and kept for the tests that follow and use it too (tests/browser, tests/hub and
    tests/service share one browser); closed before the next test that does not use it
    (:func:`pytest_runtest_setup`), which keeps the rule true in any order and on any
    ``make test`` worker. Not kept open longer: while Playwright's sync API is started it
    marks the thread's asyncio loop as running, and ``asyncio.run`` in an in-process
    test would refuse to start."""

    def __init__(self):
        self.playwright = self.browser = None

    def get(self):
        if self.browser is None:
            if not os.path.exists(CHROMIUM):
                pytest.fail("Chromium is missing: apt-get install -y chromium (.ci/run does)")
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


_CHROMIUM = SharedChromium()


@pytest.fixture(scope="session")
def chromium():
    """The session's :class:`SharedChromium` (closed at the end at the latest)."""
    yield _CHROMIUM
    _CHROMIUM.close()


@pytest.fixture
def browser(chromium):
    """Debian's headless Chromium (a Playwright ``Browser``), shared by the session:
    open pages in a context of your own and close them."""
    return chromium.get()


def pytest_runtest_setup(item):
    """Close the shared Chromium before a test that does not use it (see SharedChromium)."""
    if "chromium" not in getattr(item, "fixturenames", ()):
        _CHROMIUM.close()
