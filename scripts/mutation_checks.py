"""Break the product on purpose, run the tests that guard it, and expect them red.

Each check below is a mutation that once went unnoticed, or would have: a one-line
change to the product, and the tests that must fail with it.
The file is restored after every run, also on Ctrl-C. The order checks run tests
alone and in reverse order. Run from the repository root:

    .venv/bin/python scripts/mutation_checks.py            # all (tens of minutes)
    .venv/bin/python scripts/mutation_checks.py --list
    .venv/bin/python scripts/mutation_checks.py token-env cors-defaults

Exit status 0 when every mutation turned its tests red and every order check
passed. Run it on a quiet working tree: it edits tracked files while it runs.
"""
from __future__ import annotations

import argparse
import subprocess
import sys

from autograder.defaults import CHECKOUT as REPO

PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]

SERVE_TEST = "tests/book/test_serve.py::test_every_printed_url_answers_then_sigterm_stops_every_server"
MAKE_SERVE = "tests/browser/test_make_serve.py"
VARIANTS = "tests/grading/test_variants.py"

# name: (what it breaks, file, [(old, new)], tests that must fail)
MUTATIONS = {
    "token-env": ("JupyterLab does not get the token the URLs carry", "scripts/serve.py",
                  [("dict(base, JUPYTER_TOKEN=token, ", "dict(base, ")], [SERVE_TEST, MAKE_SERVE]),
    "token-leak": ("choosing a token writes os.environ, so later serve.py runs inherit it",
                   "scripts/jupyter_local.py",
                   [('return os.environ.get("JUPYTER_TOKEN") or secrets.token_urlsafe(24)',
                     'return os.environ.setdefault("JUPYTER_TOKEN", secrets.token_urlsafe(24))')],
                   ["tests/book/test_serve.py::test_choosing_a_token_changes_no_environment"]),
    "grader-never-starts": ("the grading service is a process that never answers", "scripts/serve.py",
                            [('"-m", "autograder.service", "--host", HOST, "--port", grader_port(),\n'
                              '                *local[0]]',
                              '"-c", "import time; time.sleep(20)"]')], [SERVE_TEST]),
    "server-chatter": ("the servers' logs go to the terminal", "scripts/serve.py",
                       [("stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT",
                         "stdin=subprocess.DEVNULL")], [MAKE_SERVE]),
    "book-chatter": ("the site build prints its 'file://' line", "Makefile",
                     [("\\\n\t  > _build/logs/book.log 2>&1 || {", "|| {")], [MAKE_SERVE]),
    "cors-defaults": ("the service's default CORS origins are empty", "autograder/service/__main__.py",
                      [('f"http://{args.host}:{site},http://127.0.0.1:{site},http://localhost:{site}"', '""')],
                      ["tests/service/test_api.py::test_cors_allows_the_course_site_only", MAKE_SERVE]),
    "submit-unsaved": ("the submit cell sends the file without waiting for a save",
                       "autograder/learner_submit.py",
                       [("    while os.path.getmtime(path) < since:", "    while False:")],
                       ["tests/service/test_submit_cell.py"]),
    "learner-asked": ("the pages ignore make serve's learner id and ask for one", "book/_static/grader.js",
                      [('var LEARNER_GIVEN = remembered("learner", "course-learner");',
                        "var LEARNER_GIVEN = null;")], [MAKE_SERVE]),
    "runner-blames": ("the runner calls a stale token a refused site", "book/_static/course-run.js",
                      [('return open.state === "ok" ? { state: "token", status: found.status || 403 } : open;',
                        "return found;")],
                      ["tests/browser/test_messages.py::test_the_runner_tells_refused_from_not_running"]),
    "form-unstyled": ("the submit form's buttons are the browser's defaults", "book/_static/course-run.css",
                      [(".grader input::file-selector-button,\n.grader button {", ".grader-unused {")],
                      ["tests/browser/test_messages.py::test_the_submit_form_looks_like_the_site"]),
    "title-overflow": ("code-styled titles do not wrap on a phone", "book/_static/page-layout.css",
                       [("html .bd-article code.literal,\nhtml .bd-article code.literal span.pre {",
                         ".unused-a {"),
                        ("html .bd-article h1 code.literal { font-size: .75em; }", "")],
                       ["tests/browser/test_pages.py::test_page_in_the_browser[book/exercises/update_with_donate]"]),
    "narrow-column": ("the theme's wide page contents leave code cells scrolling at 1280 px",
                      "book/_static/page-layout.css",
                      [(":root { --pst-sidebar-secondary: 12rem; }", "")],
                      ["tests/browser/test_layout.py::test_the_lesson_column_is_wide_on_a_laptop"]),
    "table-frame": ("a table's frame is wider than its rows", "book/_static/page-layout.css",
                    [("  width: max-content;\n", "")],
                    ["tests/browser/test_layout.py::test_pages_keep_the_layout_rules_on_a_tablet"]),
    "warning-paths": ("lesson warnings show the build machine's file paths", "book/_ext/course_run.py",
                      [('out.append(line[header.start("category"):])', "out.append(line)")],
                      ["tests/browser/test_offline.py::test_no_page_shows_a_path_of_the_machine_that_built_it"]),
    "tree-one-per-learner": ("the grader takes one exercise per learner of an nbgrader tree",
                             "autograder/load.py",
                             [('name, assignment = "/".join(parts[-3:-1]), parts[-2]',
                               "name, assignment = parts[-3], parts[-2]")],
                             ["tests/grading/test_class_tree.py"]),
    "run-all-stops": ("Run All stops at a failing self-check, before the submit cell",
                      "autograder/nbgrader_release.py",
                      [('if cell.cell_type == "code" and RUN_PAST not in tags:', "if False:")],
                      ["tests/grading/test_release.py::test_run_all_runs_past_every_cell_before_the_submit_cell",
                       "tests/browser/test_jupyterlab.py::test_run_all_on_a_wrong_answer_still_submits"]),
    "exercises-read-once": ("the service knows only the exercises registered when it started",
                            "autograder/exercises/__init__.py",
                            [('    return _registered["names"]', "    return NAMES")],
                            ["tests/service/test_new_exercise.py"]),
    "workspace-laid-once": ("a running learner's server never gets a later release",
                            "deploy/hub/course_spawner.py",
                            [("if status is None and self._laid != release_state():", "if False:")],
                            ["tests/hub/test_new_release.py"]),
    "hidden-tests-read-once": ("the service grades with the hidden tests it started with",
                               "autograder/exercises/current.py",
                               [("                error = _load(name)",
                                 "                error = None if seen else _load(name)")],
                               ["tests/service/test_course_changes.py::test_hidden_tests_changed_on_disk_grade_new_submissions_and_the_regrade"]),
    "release-unchecked": ("a release that adds a graded cell after submissions goes ahead",
                          "autograder/release.py",
                          [("    if released is None or not released[0] or released[1] == source_ids:",
                            "    if True:")],
                          ["tests/grading/test_release_refusal.py",
                           "tests/service/test_course_changes.py::test_a_release_nbgrader_cannot_apply_is_refused_before_anything_is_touched"]),
    "penalties-written-once": ("the gradebook keeps penalties of an older late policy",
                               "autograder/service/gradebook/sync.py",
                               [("        if self.store.mark(DEADLINES_MARK) == state:",
                                 "        if True:")],
                               ["tests/service/test_course_changes.py::test_an_edited_late_policy_applies_to_every_view_or_is_flagged"]),
    "edited-notebook-not-offered": ("a learner who edited a notebook never gets its new release",
                                    "scripts/jupyter_local.py",
                                    [("                offer_new_version(rel, source, target, manifest)",
                                      "                pass")],
                                    ["tests/book/test_workspace.py"]),
    "helper-by-signature": ("a donating helper is known by its parameter list, not the arrays it takes",
                            "autograder/exercises/update_with_donate/hidden/tests.py",
                            [('if STATE_TYPE in m["args"]]', 'if m["args"] == [STATE_TYPE, STATE_TYPE]]')],
                            [VARIANTS]),
    "copy-to-step": ("a copy handed to run's step passes for the state",
                     "autograder/exercises/silent_donation/hidden/tests.py",
                     [("if len(flags) == RUN_STEPS and all(flags) and copies:", "if False:")], [VARIANTS]),
    "example-params": ("fix_training_loop's hidden params are the notebook's example",
                       "autograder/exercises/fix_training_loop/probe.py",
                       [("    if rng.integers(2):\n        return sizes, ((layer, head), (weight, bias))\n",
                         '    return (3, 8, 1), ("w1", "b1", "w2", "b2")\n')], [VARIANTS]),
    "crash-costs-all": ("a crash on one named donation_report case costs every check",
                        "autograder/exercises/donation_report/hidden/tests.py",
                        [("\n            and obs[\"cases\"][name][\"error\"] is None]", "]")],
                        [VARIANTS]),
}

# name: (what it shows, pytest arguments that must pass)
ORDER = {
    "feedback-alone": ("nbgrader feedback needs no other test's writes",
                       ["tests/grading/test_samples.py::test_nbgrader_feedback_is_written"]),
    "samples-reversed": ("the nbgrader tests pass in reverse order",
                         ["tests/grading/test_samples.py::test_nbgrader_feedback_is_written",
                          "tests/grading/test_samples.py::test_nbgrader_autograde_agrees_on_every_total",
                          "tests/grading/test_samples.py::test_rerun_grades_nothing_unchanged"]),
}


def pytest(args) -> int:
    print("    $ pytest " + " ".join(args), flush=True)
    return subprocess.run([*PYTEST, *args], cwd=REPO).returncode


def mutate(name: str) -> bool:
    what, rel, edits, tests = MUTATIONS[name]
    path = REPO / rel
    original = path.read_text()
    broken = original
    for old, new in edits:
        if broken.count(old) != 1:
            print(f"==> {name}: the code to break is no longer in {rel} (update this check): {old!r}")
            return False
        broken = broken.replace(old, new)
    print(f"==> {name}: {what} [{rel}]", flush=True)
    try:
        path.write_text(broken)
        red = [t for t in tests if pytest([t]) != 0]
    finally:
        path.write_text(original)
    missed = [t for t in tests if t not in red]
    print(f"==> {name}: " + ("caught" if not missed else f"NOT CAUGHT by {missed}"), flush=True)
    return not missed


def order(name: str) -> bool:
    what, args = ORDER[name]
    print(f"==> {name}: {what}", flush=True)
    ok = pytest(args) == 0
    print(f"==> {name}: " + ("passes" if ok else "FAILS"), flush=True)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="checks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the checks")
    args = parser.parse_args(argv)
    if args.list:
        for name, (what, rel, _, tests) in MUTATIONS.items():
            print(f"{name:20} {what}\n{'':20} breaks {rel}; must fail: {', '.join(tests)}")
        for name, (what, tests) in ORDER.items():
            print(f"{name:20} {what}: {', '.join(tests)}")
        return 0
    names = args.names or [*MUTATIONS, *ORDER]
    unknown = [n for n in names if n not in MUTATIONS and n not in ORDER]
    if unknown:
        parser.error(f"unknown checks: {unknown}")
    results = {n: mutate(n) if n in MUTATIONS else order(n) for n in names}
    print("\n".join(f"{'ok  ' if ok else 'FAIL'} {n}" for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
