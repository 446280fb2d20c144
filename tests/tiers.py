"""Which slow tier each test belongs to, decided by what it starts; and which tests
share a ``make test`` worker.

The markers are declared in pytest.ini; ``--fast`` (``make test-fast``) runs only
the tests that have none of them. A test
gets a tier's marker when it uses (directly or through another fixture) a
fixture listed here, or lives in a module listed here, or its node id starts
with an entry here (for a test that starts the thing in its own body). Tests
are not edited to be tiered: a new test that uses ``built_site`` is in ``book``
without saying so. The hook is :func:`mark`, called from tests/conftest.py.
"""
from __future__ import annotations

import configparser
import inspect
import re

# fixture ("module.function" of its definition) -> tiers of what it starts
FIXTURES = {
    "tests.conftest.built_site": {"book"},
    "tests.conftest.chromium": {"browser"},
    "tests.browser.conftest.servers": {"service"},  # scripts/serve.py: site, grader, JupyterLab
    "tests.grading.conftest.cli_runs": {"grader"},
    "tests.grading.test_agreement.graded": {"grader", "nbgrader"},
    "tests.grading.test_exercises.graded": {"grader"},
    "tests.grading.test_variants.graded": {"grader"},
    "tests.grading.test_samples.autograded": {"nbgrader"},
    "tests.service.test_roster.made_gradebook": {"nbgrader"},  # nbgrader db's commands
    "tests.grading.test_hostile.hostile": {"grader"},
    "tests.grading.test_gradescope.zips": {"grader"},
    "tests.grading.test_gradescope.hostile_zip": {"grader"},
    "tests.service.conftest.service": {"service"},
    "tests.service.conftest.new_service": {"service"},
    "tests.service.conftest.store_service": {"service"},  # its PostgreSQL case: marked by its param
    "tests.service.conftest.worker": {"service"},
    "tests.service.conftest.postgres": {"postgres"},
    "tests.hub.conftest.hub": {"hub", "book"},  # make hub builds the site first
    "tests.hub.conftest.lti_hub": {"hub", "book"},  # the same, signing in by LTI launch
    "tests.hub.conftest.domain_hub": {"hub", "book"},  # the same, at HUB_DOMAIN hub.test
}

# node id prefix (a folder, a module, or a test) -> tiers of what it starts in its body
NODES = {
    "tests/hub/": {"hub"},
    "tests/ci/": {"ci"},  # .ci/run in a private mount namespace (root, unshare)
    "tests/grading/test_cgroup_v2_vm.py": {"vm"},  # QEMU: a cgroup v2 only kernel
    "tests/hub/test_swarm.py": {"swarm"},  # two dockerd as a swarm, the course image
    "tests/book/test_book_build.py": {"book"},  # builds small books of its own
    "tests/book/test_serve.py::test_every_printed_url": {"service"},
    "tests/book/test_serve.py::test_no_server_outlives": {"service"},
    "tests/service/test_new_exercise.py": {"service"},
    "tests/lti/test_passback.py": {"service"},  # a course's database, a platform, senders
    "tests/lti/test_lms_course.py": {"service"},  # the same, launches of other LMS courses
    "tests/service/test_course_changes.py": {"service"},
    "tests/service/test_backup.py::test_a_restored_course_is": {"service"},
    "tests/grading/test_cli.py": {"grader"},
    "tests/grading/test_golden.py": {"grader"},
    "tests/grading/test_zygote_limits.py": {"grader"},  # starts interpreters
    "tests/grading/test_class_tree.py": {"grader"},
    "tests/grading/test_messages.py": {"grader"},
    "tests/grading/test_parallel.py": {"grader"},
    # runs every sample's self-check, in a process of its own per exercise
    "tests/grading/test_self_checks.py::test_validate_passes": {"grader"},
    "tests/grading/test_samples.py::test_rerun_grades_nothing_unchanged": {"grader"},
    "tests/grading/test_exercises.py::test_plain_python_reference": {"grader"},
    "tests/grading/test_exercises.py::test_nbgrader_autograde": {"nbgrader"},
    "tests/grading/test_hostile.py::test_escaped_children": {"grader"},
    "tests/grading/test_hostile.py::test_killed_mid_class": {"grader"},
    "tests/grading/test_hostile.py::test_orphaned_supervisor": {"grader"},
    "tests/grading/test_hostile.py::test_forged_observations": {"grader"},
    "tests/grading/test_hostile.py::test_a_grader_that_cannot_isolate": {"grader"},
    "tests/grading/test_gradescope.py": {"grader"},
    "tests/grading/test_private_outputs.py": {"grader"},  # builds the zips, grades a walker
    "tests/grading/test_contained.py": {"grader"},
    "tests/grading/test_compile_cache_sandbox.py": {"grader"},  # warms, grades with zygotes
    "tests/grading/test_no_server_reached.py": {"grader"},
    "tests/grading/test_validate.py": {"nbgrader"},  # nbgrader validate's kernels
}


# What a test body may call that starts a grading command, nbgrader or a server: such
# a test must be in a slow tier (collection stops otherwise, see mark).
STARTERS = re.compile(r"\b(grader_cli|nbgrader|release|Service|Worker|Hub)\(|"
                      r"\"-m\", \"(autograder|autograder\.service[.\w]*|jupyterhub|nbgrader)\"|"
                      r"\"make\", \"(serve|hub|test)\"")


def starters_in(source: str) -> list[str]:
    """The calls in ``source`` (a test's text) that start a grader, nbgrader or a server."""
    return sorted({m.group(0) for m in STARTERS.finditer(source)})


def started_in_body(item) -> list[str]:
    """:func:`starters_in` ``item``'s own function."""
    try:
        return starters_in(inspect.getsource(item.function))
    except (AttributeError, OSError, TypeError):
        return []


def tiers_of(item) -> set[str]:
    """The slow tiers ``item`` (a collected test) belongs to."""
    found = set()
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for fixturedef in defs:
            func = getattr(fixturedef.func, "__wrapped__", fixturedef.func)
            found |= FIXTURES.get(f"{func.__module__}.{func.__name__}", set())
    for prefix, tiers in NODES.items():
        if item.nodeid.startswith(prefix):
            found |= tiers
    return found


def declared(config) -> set[str]:
    """The tiers: the markers pytest.ini itself declares (``getini("markers")`` also has
    those plugins register)."""
    ini = configparser.ConfigParser()
    ini.read(config.inipath)
    return {line.split(":")[0].strip() for line in ini["pytest"]["markers"].splitlines() if line.strip()}


def mark(config, items, pytest) -> None:
    """Add each item's tier markers; with ``--fast``, deselect every tiered test
    (pytest_collection_modifyitems)."""
    slow = declared(config)
    fast, deselected = [], []
    for item in items:
        tiers = tiers_of(item)
        unknown = tiers - slow
        if unknown:
            raise pytest.UsageError(f"tests/tiers.py names tiers pytest.ini does not declare: {unknown}")
        if tiers & SITE_TIERS and group_of(item.nodeid) not in SITE:
            raise pytest.UsageError(f"{item.nodeid} builds or reads the course site: add its "
                                    "path to SITE_NODES in tests/tiers.py")
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))
        tiers |= {m.name for m in item.iter_markers()} & slow  # a param's own mark
        if not tiers and started_in_body(item):
            raise pytest.UsageError(f"{item.nodeid} starts {', '.join(started_in_body(item))} in "
                                    "its body but is in no slow tier: add it to NODES in tests/tiers.py")
        (deselected if tiers else fast).append(item)
    if config.getoption("fast"):
        config.hook.pytest_deselected(items=deselected)
        items[:] = fast


# Where the tests live that build or read the course site in _build/ (the book and hub
# tiers; make hub runs make book first): a build there rewrites pages another test may
# be reading, so under make test they all run on one pytest-xdist worker. Collection
# stops (mark) when a test of those tiers lives anywhere else.
SITE_NODES = ("tests/book/", "tests/browser/", "tests/hub/", "tests/service/test_browser.py")
SITE_TIERS = {"book", "hub"}
# The hub's tests are two groups of their own, beside the book's and the browser's: their
# make hub brings the built site up to date, which writes only files whose bytes changed,
# each by a rename (book/_ext, scripts/), so a page another worker is reading is never half
# written. A package fixture is made once per worker (tests/hub/conftest.py), so the
# modules that use the shared ``hub`` stay in ``course-hub``, and a new module goes there;
# ``course-hub-own`` holds those with a hub of their own (LTI, a domain, small limits, an
# API-only grader, a course that changes) or none, on another worker at the same time.
OWN_HUBS = ("test_api_only", "test_cookie_tossing", "test_course_changes", "test_learner_disk",
            "test_limits", "test_lti_class", "test_lti_drop", "test_lti_launch", "test_pipes",
            "test_proxy.py", "test_proxy_pid", "test_swarm")
SITE_GROUPS = {**{f"tests/hub/{m}": "course-hub-own" for m in OWN_HUBS},
               "tests/hub/": "course-hub"}
SITE = ("course-site", *dict.fromkeys(SITE_GROUPS.values()))
# Tests that read what one session fixture graded, from several modules, share a worker
# (node id prefix -> group): the command line's run over each corpus (tests/grading/conftest.py).
SHARED = {
    "tests/grading/test_golden.py::test_results_are_unchanged[cli-hostile.json]": "cli-hostile",
    "tests/grading/test_hostile.py::": "cli-hostile",
    "tests/grading/test_golden.py::test_results_are_unchanged[cli-samples.json]": "cli-samples",
    # the other doors read the sandbox's outcomes of that run (test_golden.py: SHARED)
    "tests/grading/test_golden.py::test_results_are_unchanged[service-samples.json]": "cli-samples",
    "tests/grading/test_golden.py::test_results_are_unchanged[gradescope-samples.json]": "cli-samples",
    "tests/grading/test_exercises.py::": "cli-samples",
    "tests/grading/test_samples.py::test_results_follow": "cli-samples",
    "tests/grading/test_samples.py::test_summary_matches": "cli-samples",
}
# Tests that each grade or autograde a corpus of their own, with nothing costly shared with
# the rest of their module: a group each, so the workers share them.
ALONE = (
    "tests/grading/test_golden.py::test_results_are_unchanged[",
    "tests/grading/test_exercises.py::test_nbgrader_autograde_agrees_on_every_total[",
)

# Modules whose group holds one worker a minute or more (make test's slowest steps, runs of
# 2026-12-07), with few tests each: by test count they started among the last, and the run
# ended on one of them (the service's course changes, 200 s, began at 1402 s of a 1637 s
# run) while the other workers had nothing left. Longest first, before the other modules.
LONG = ("tests/service/test_course_changes.py", "tests/grading/test_compile_cache_sandbox.py",
        "tests/grading/test_cgroup_v2_vm.py", "tests/grading/test_agreement.py",
        "tests/grading/test_self_checks.py", "tests/grading/test_no_server_reached.py",
        "tests/service/test_backup.py")


def group_of(nodeid: str) -> str:
    """The ``make test`` worker group of the test ``nodeid``: ``course-site`` for the
    tests under :data:`SITE_NODES` (those under :data:`SITE_GROUPS` its group), the node itself for :data:`ALONE`, a
    :data:`SHARED` group, else its module (a module's fixtures are made once).
    From the node id alone: pytest-xdist's controller schedules by node id and never
    collects (conftest.py: pytest_xdist_make_scheduler)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SITE_NODES):
        return next((g for prefix, g in SITE_GROUPS.items() if path.startswith(prefix)),
                    "course-site")
    if nodeid.startswith(ALONE) and nodeid not in SHARED:
        return nodeid
    return next((group for prefix, group in SHARED.items() if nodeid.startswith(prefix)), path)


def start_order(nodeids) -> list[str]:
    """The groups of ``nodeids`` (collected node ids), in the order ``make test``'s workers
    take them: the course site's, then those :data:`SHARED` and :data:`ALONE` split out for
    their cost, then the :data:`LONG` modules in its order, then the rest, most tests
    first. (pytest-xdist's own order, most tests first, would start the single-test groups
    that grade a whole corpus last, and the run would end on one worker.)"""
    counts = {}
    for nodeid in nodeids:
        group = group_of(nodeid)
        counts[group] = counts.get(group, 0) + 1

    def rank(group):
        if group in SITE:
            return (0, 0)
        if group.startswith(ALONE) or group in SHARED.values():
            return (1, 0)
        return (2, LONG.index(group)) if group in LONG else (3, 0)

    return sorted(counts, key=lambda g: (rank(g), -counts[g]))


def schedule(steps, top=5) -> list[str]:
    """What ``make test``'s workers did, from ``steps``: ``[(worker, nodeid, start, stop)]``
    (each test's setup, call and teardown; epoch seconds). Lines saying, per worker, its
    busy seconds and when it finished, and the :func:`group_of` groups that finished last
    and the ``top`` longest (on which worker, from and to, busy seconds; counted from the
    first step's start). The run ends with its last group: where one group's span is most
    of the run, that group is what to shorten or split."""
    if not steps:
        return []
    t0 = min(start for _, _, start, _ in steps)
    end = max(stop for _, _, _, stop in steps)
    workers, groups = {}, {}
    for worker, nodeid, start, stop in steps:
        busy, first, last = workers.get(worker, (0.0, start, stop))
        workers[worker] = (busy + stop - start, min(first, start), max(last, stop))
        key = (group_of(nodeid), worker)
        busy, first, last = groups.get(key, (0.0, start, stop))
        groups[key] = (busy + stop - start, min(first, start), max(last, stop))
    lines = [f"{w}: busy {busy:.0f} s of {end - t0:.0f} s, done at {last - t0:.0f} s"
             for w, (busy, _, last) in sorted(workers.items())]

    def say(key):
        (group, worker), (busy, first, last) = key, groups[key]
        return f"  {group} on {worker}: {first - t0:.0f}-{last - t0:.0f} s, busy {busy:.0f} s"

    lines.append("groups that finished last:")
    lines += [say(k) for k in sorted(groups, key=lambda k: -groups[k][2])[:top]]
    lines.append("longest groups:")
    lines += [say(k) for k in sorted(groups, key=lambda k: -groups[k][0])[:top]]
    return lines
