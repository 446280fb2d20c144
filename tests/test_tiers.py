"""tests/tiers.py names only what exists: a fixture or test renamed without it would
silently drop its slow tier, and the fast tier would start a build or a server."""
import ast
import importlib

import pytest

from tests import tiers
from tests.course import REPO


@pytest.mark.parametrize("name", sorted(tiers.FIXTURES))
def test_each_tiered_fixture_exists(name):
    module, func = name.rsplit(".", 1)
    assert hasattr(importlib.import_module(module), func), f"tests/tiers.py: no fixture {name}"


@pytest.mark.parametrize("prefix", sorted(tiers.NODES))
def test_each_tiered_node_exists(prefix):
    path, _, test = prefix.partition("::")
    assert (REPO / path).exists(), f"tests/tiers.py: no {path}"
    if test:
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert any(n.startswith(test) for n in vars(module)), f"tests/tiers.py: no test {prefix}"


def test_each_tier_is_declared(pytestconfig):
    used = set().union(*tiers.FIXTURES.values(), *tiers.NODES.values())
    assert used == tiers.declared(pytestconfig)


@pytest.mark.parametrize("nodeid,group", [
    ("tests/hub/test_identity.py::test_unsigned_requests_are_refused", "course-hub"),
    ("tests/hub/test_lti_launch.py::test_a_bad_launch_signs_nobody_in_and_says_why[x]",
     "course-hub-own"),
    ("tests/hub/test_proxy_pid.py::test_a_hub_stops_its_leftover_proxy", "course-hub-own"),
    ("tests/hub/test_proxy.py::test_the_proxy_keeps_connections", "course-hub-own"),
    ("tests/hub/test_proxy_cap.py::test_x", "course-hub"),
    ("tests/book/test_serve.py::test_every_printed_url_answers[a::b]", "course-site"),
    ("tests/service/test_browser.py::test_submit_from_the_exercise_page", "course-site"),
    ("tests/book/test_drift.py::test_the_committed_drift_report_was_made_from_this_checkouts_"
     "lessons_samples_and_grader", "course-site"),
    ("tests/service/test_api.py::test_x[sqlite]", "tests/service/test_api.py"),
    ("tests/grading/test_samples.py::test_summary_matches_results_on_disk", "cli-samples"),
    ("tests/grading/test_samples.py::test_nbgrader_feedback_is_written",
     "tests/grading/test_samples.py"),
    ("tests/grading/test_golden.py::test_results_are_unchanged[cli-samples.json]", "cli-samples"),
    ("tests/grading/test_exercises.py::test_sample_gets_expected_grade[silent_donation-reference]",
     "cli-samples"),
    ("tests/grading/test_golden.py::test_results_are_unchanged[service-samples.json]",
     "cli-samples"),
    ("tests/grading/test_golden.py::test_results_are_unchanged[service-hostile.json]",
     "tests/grading/test_golden.py::test_results_are_unchanged[service-hostile.json]"),
    ("tests/grading/test_golden.py::test_results_are_unchanged[cli-hostile.json]", "cli-hostile"),
    ("tests/grading/test_hostile.py::test_summary_matches_results", "cli-hostile"),
    ("tests/grading/test_exercises.py::test_nbgrader_autograde_agrees_on_every_total[a]",
     "tests/grading/test_exercises.py::test_nbgrader_autograde_agrees_on_every_total[a]"),
    ("tests/grading/test_golden.py::test_every_door_and_group_is_recorded",
     "tests/grading/test_golden.py"),
])
def test_make_test_groups_by_site_shared_runs_else_module(nodeid, group):
    assert tiers.group_of(nodeid) == group


def test_a_body_that_starts_a_grader_or_server_is_seen():
    q = '"'
    call = "grader_cli" + "("
    grader = call + "tmp_path, '--out', tmp_path)"
    service = f"subprocess.run([sys.executable, {q}-m{q}, {q}autograder.service{q}])"
    defaults = f"subprocess.run([sys.executable, {q}-m{q}, {q}autograder.defaults{q}])"
    assert tiers.starters_in(grader) == [call]
    assert tiers.starters_in(service) == [f"{q}-m{q}, {q}autograder.service{q}"]
    assert tiers.starters_in(defaults) == []


@pytest.mark.parametrize("prefix", sorted(tiers.SHARED) + sorted(tiers.ALONE))
def test_each_grouped_node_exists(prefix):
    path, _, test = prefix.partition("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    assert any(n.startswith(test.split("[")[0]) for n in vars(module)), f"tests/tiers.py: no {prefix}"


def test_make_test_starts_the_site_then_the_split_groups_then_the_long_then_the_biggest_modules():
    nodeids = ["tests/service/test_api.py::a", "tests/service/test_api.py::b",
               "tests/service/test_restart.py::a",
               "tests/grading/test_golden.py::test_results_are_unchanged[service-hostile.json]",
               "tests/grading/test_exercises.py::test_x[a]", "tests/book/test_book_site.py::a",
               "tests/grading/test_golden.py::test_every_door_and_group_is_recorded",
               "tests/grading/test_cgroup_v2_vm.py::a", "tests/service/test_course_changes.py::a"]
    assert tiers.start_order(nodeids) == [
        "course-site", "tests/grading/test_golden.py::test_results_are_unchanged[service-hostile.json]",
        "cli-samples", "tests/service/test_course_changes.py", "tests/grading/test_cgroup_v2_vm.py",
        "tests/service/test_api.py", "tests/service/test_restart.py", "tests/grading/test_golden.py"]


@pytest.mark.parametrize("module", tiers.LONG)
def test_each_long_module_exists(module):
    assert (REPO / module).is_file(), f"tests/tiers.py: LONG names no {module}"


@pytest.mark.parametrize("module", tiers.OWN_HUBS)
def test_the_own_hubs_group_starts_no_shared_hub(module):
    """A module in ``course-hub-own`` whose tests or fixtures asked for the package's ``hub``
    (or ``sign_in``, which signs in to it) would start that hub a second time, on another
    worker."""
    path = REPO / "tests" / "hub" / (module if module.endswith(".py") else module + ".py")
    assert path.exists(), f"tests/tiers.py: OWN_HUBS names no {path.name}"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and (node.name.startswith("test_") or any(
                "fixture" in ast.unparse(d) for d in node.decorator_list)):
            asked = {a.arg for a in node.args.args} & {"hub", "sign_in"}
            assert not asked, f"{path.name}: {node.name} asks for {asked}"


def test_the_schedule_names_the_group_that_ends_the_run():
    """make test's summary: each worker's busy time, and the group that finished last
    with its span, from the steps' workers and times."""
    hub, book = "tests/hub/test_identity.py::test_a", "tests/book/test_serve.py::test_b"
    steps = [("gw0", hub, 100.0, 160.0), ("gw0", hub + "2", 160.0, 400.0),
             ("gw1", book, 100.0, 150.0), ("gw1", "tests/test_docs.py::test_c", 150.0, 170.0),
             ("gw1", "tests/test_docs.py::test_d", 180.0, 200.0)]
    lines = tiers.schedule(steps, top=2)
    assert lines[:2] == ["gw0: busy 300 s of 300 s, done at 300 s",
                         "gw1: busy 90 s of 300 s, done at 100 s"]
    assert lines[2:4] == ["groups that finished last:", "  course-hub on gw0: 0-300 s, busy 300 s"]
    assert lines[-2:] == ["  course-hub on gw0: 0-300 s, busy 300 s",
                          "  course-site on gw1: 0-50 s, busy 50 s"]
    assert tiers.schedule([]) == []
