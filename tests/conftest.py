"""The session's hooks (the tiers, ``make test``'s scheduler) and what several packages
need once per session: a released copy of the nbgrader course, the site build, and
Debian's Chromium. Paths and commands live in tests/course.py, the shared browser in
tests/chromium.py."""
import fcntl
import gc
import os
import shutil
from pathlib import Path

import pytest

from tests import tiers
from tests.chromium import SharedChromium
from tests.course import REPO, release_every_exercise

# The grader's compile cache is machine-wide (/var/cache): the suite grades without it, so
# that no test leaves a warming process behind or depends on what an earlier run warmed;
# tests/grading/test_compile_cache.py gives it folders of its own. Set the variable to grade
# the suite with one (the golden results must not change).
os.environ.setdefault("GRADER_COMPILE_CACHE", "")


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help="run only the fast tier: tests in none of pytest.ini's slow tiers")


def pytest_collection_modifyitems(config, items):
    """Mark each test with the slow tiers it starts (tests/tiers.py; pytest.ini lists them)."""
    tiers.mark(config, items, pytest)


def pytest_collection_finish(session):
    """The modules the tests imported (JAX, nbgrader, the course's) live for the whole
    session: out of the garbage collector's sight (``gc.freeze``), so that the collections
    while in-process graders and services run walk only what the tests made."""
    gc.freeze()


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than pytest-xdist's own count (its cores), unless
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says how many. A fifth of a two-worker run's CPU
    time was idle (/proc/stat every 5 s): its tests wait for servers to start, for time
    limits and leases to run out, for Chromium and the hub; a third worker grades meanwhile."""
    from xdist import plugin

    said = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip().isdigit()
    return plugin.pytest_xdist_auto_num_workers(config) + (0 if said else 1)


def pytest_xdist_make_scheduler(config, log):
    """``make test``'s workers (``-n auto``) take whole groups (:func:`tiers.group_of`),
    in :func:`tiers.start_order`.
    A scheduler of our own rather than ``--dist loadgroup``: with pytest 9.2 that mode
    no longer sees ``xdist_group`` marks (pytest-dev/pytest-xdist#1386) and spreads a
    module's tests over workers, each making the module's fixtures again."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return tiers.group_of(nodeid)

        def schedule(self):
            # The work queue's groups in tiers.start_order: LoadScopeScheduling fills its
            # (empty) queue by assignment, so groups already in it keep their places.
            if self.collection is None and self.collection_is_completed and not self.workqueue:
                for group in tiers.start_order(next(iter(self.registered_collections.values()))):
                    self.workqueue[group] = {}
            super().schedule()

    return GroupScheduling(config, log)


_STEPS = []  # make test's controller: (worker, nodeid, start, stop) of every step run


def pytest_runtest_logreport(report):
    """Under pytest-xdist's controller, note which worker ran each step, and when."""
    node = getattr(report, "node", None)
    if node is not None:
        _STEPS.append((node.gateway.id, report.nodeid, report.start, report.stop))


def pytest_terminal_summary(terminalreporter):
    """After ``make test``'s slowest steps: each worker's busy time and the groups that
    finished last and took longest (:func:`tiers.schedule`), to see what bounds the run."""
    if _STEPS:
        terminalreporter.write_sep("=", "workers and groups")
        for line in tiers.schedule(_STEPS):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """``exercises/source`` after ``nbgrader generate_assignment`` of every exercise, in a
    temporary course folder, with an empty gradebook that knows every graded cell.
    Shared and read-only: copy it (:func:`tests.course.copy_course`) to write. Under
    ``make test`` the first worker to need it releases it, in the run's temporary folder,
    and the others take that one (a release is 4.5 CPU-seconds, 21 s on the loaded machine)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return release_every_exercise(tmp_path_factory.mktemp("course"))
    run = tmp_path_factory.getbasetemp().parent  # this run's, each worker's own folder in it
    course, done = run / "released" / "course", run / "released" / ".done"
    course.parent.mkdir(exist_ok=True)
    with open(run / "released" / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():  # (a worker whose release failed left no .done: start again)
            shutil.rmtree(course, ignore_errors=True)
            course.mkdir()
            release_every_exercise(course)
            done.touch()
    return course


@pytest.fixture(scope="session")
def built_site(pytestconfig) -> Path:
    """The course site, built (or brought up to date) once per test run with the strict,
    incremental command ``make book`` uses; fails with the build's log if it breaks.
    Returns ``_build/html``. Under ``make test`` the first worker to need it builds it and
    the others find it built (the course site's and the hub's workers read it meanwhile; an
    unchanged build rewrites none of its pages: tests/book/test_book_build.py)."""
    from tests.book.sitebuild import HTML, build_book, build_lock

    run = getattr(pytestconfig, "workerinput", {}).get("testrunuid")
    built = HTML.parent / ".built-by-test-run"
    with build_lock():
        if run and built.is_file() and built.read_text() == run:
            return HTML
        result = build_book(REPO, locked=True)
        if result.returncode != 0:
            pytest.fail(f"the strict site build failed:\n{(result.stdout + result.stderr)[-6000:]}")
        assert (HTML / "index.html").exists(), "the build produced no index.html"
        if run:
            built.write_text(run)
    return HTML


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
    """Close the shared Chromium before a test that does not use it (see
    :class:`tests.chromium.SharedChromium`)."""
    if "chromium" not in getattr(item, "fixturenames", ()):
        _CHROMIUM.close()
