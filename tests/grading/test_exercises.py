"""The exercises after the first: release, samples graded by both graders.

For each exercise in :data:`NEW` (every registered one after the first; the command
line's grades of every exercise, :data:`ALL`, the first included), the
sample answer cells in ``autograder/exercises/<exercise>/hidden/samples/`` are
put into the released notebook and handed in as an nbgrader ``submitted/``
tree. The command line's grades are the session's run over every exercise's
samples (``cli_runs("samples")``, tests/grading/conftest.py: the same run the
golden results are compared with); ``nbgrader autograde`` grades samples whose totals fix
each check's points (helpers.one_per_check) in a private copy of the released course.
Both must give each sample its expected total (``expected.json`` there).
"""
import json
import shutil
import warnings
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import exercises
from autograder.judge import hidden_tests
from tests.course import REPO, grader_cli, nbgrader
from tests.grading.helpers import (
    STOPPED,
    assert_phrases,
    expected,
    one_per_check,
    released_notebook,
    samples_dir,
    submitted_tree,
)
from tests.grading.test_samples import results

ALL = exercises.names()
NEW = ALL[1:]  # the first exercise's release and nbgrader run: tests/grading/test_samples.py
SAMPLE_CASES = [(a, name) for a in ALL for name in sorted(expected(a))]


@pytest.fixture
def graded(cli_runs):
    """``(out_dir, exit status, progress lines)`` of the command line's run over every
    exercise's samples (results in ``out_dir/<sample>/<exercise>/results.json``)."""
    run = cli_runs("samples")
    return run["out"], run["exit"], run["stdout"].splitlines()


@pytest.fixture
def handed_in(released_course, tmp_path):
    """``handed_in(assignment) -> course``: a private copy of the released course with
    the samples helpers.one_per_check picks for ``assignment``
    handed in as ``submitted/<sample>/<assignment>/``."""
    def hand_in(assignment):
        course = tmp_path / "course"
        shutil.copytree(released_course, course, ignore=shutil.ignore_patterns(
            "submitted", "autograded", "feedback"))
        submitted_tree(course, course / "submitted", one_per_check(assignment), assignment)
        return course

    return hand_in


def _cells(nb):
    return [c for c in nb["cells"] if "nbgrader" in c["metadata"]]


@pytest.mark.parametrize("assignment", NEW)
def test_release_has_stub_and_no_hidden_tests(released_course, assignment):
    text = json.dumps(released_notebook(released_course, assignment))
    assert "raise NotImplementedError()" in text
    for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN", "nbgrader_bridge", "check("):
        assert secret not in text
    code = "\n".join("".join(c["source"]) for c in released_notebook(released_course, assignment)["cells"])
    solution = _solution_lines(assignment)
    assert solution and not [line for line in solution if line in code]


def _solution_lines(assignment):
    """Lines of the source answer cell's solution (over 20 characters) that learners are not given."""
    cells = [(c["metadata"].get("nbgrader", {}).get("grade_id"), "".join(c["source"]))
             for c in json.loads(exercises.get(assignment).source.read_text())["cells"]]
    answer = next(source for grade_id, source in cells if grade_id == assignment)
    inside = answer.partition("### BEGIN SOLUTION")[2].partition("### END SOLUTION")[0]
    given = "\n".join(source for grade_id, source in cells if grade_id != assignment)
    return [s for s in map(str.strip, inside.splitlines()) if len(s) > 20 and s not in given]


@pytest.mark.parametrize("assignment", NEW)
def test_one_answer_cell_and_a_self_check(released_course, assignment):
    cells = _cells(released_notebook(released_course, assignment))
    answers = [c for c in cells if c["metadata"]["nbgrader"]["solution"]]
    assert [c["metadata"]["nbgrader"]["grade_id"] for c in answers] == [assignment]
    assert any(c["metadata"]["nbgrader"]["grade_id"] == "self_check" for c in cells)


@pytest.mark.parametrize("assignment", NEW)
def test_graded_cells_match_hidden_tests(assignment):
    source = REPO / "exercises" / "source" / assignment / f"{assignment}.ipynb"
    graded_cells = [(c["metadata"]["nbgrader"]["grade_id"], c["metadata"]["nbgrader"]["points"])
                    for c in _cells(json.loads(source.read_text()))
                    if c["metadata"]["nbgrader"]["grade"]]
    assert graded_cells == [(name, points) for name, _, points in hidden_tests(assignment)]
    assert sum(points for _, points in graded_cells) == 10


@pytest.mark.parametrize("assignment", ALL)
def test_command_reports_every_submission_and_exits_0(graded, assignment):
    _, code, lines = graded
    assert code == 0
    names = sorted(n for n in (line.split(":")[0] for line in lines) if n.endswith(f"/{assignment}"))
    assert names == sorted(f"{n}/{assignment}" for n in expected(assignment))


@pytest.mark.parametrize("assignment,name", SAMPLE_CASES)
def test_sample_gets_expected_grade(graded, assignment, name):
    out = graded[0]
    want, got = expected(assignment)[name], results(out, name, assignment)
    titles = {title: test for test, title, _ in hidden_tests(assignment)}
    assert got["score"] == want["score"], got
    assert got["max_score"] == 10
    failed = {titles[t["name"]] for t in got["tests"] if t["status"] == "failed"}
    assert failed == (set(titles.values()) if want["failed"] == "all" else set(want["failed"]))
    if "output" in want:
        assert want["output"] in got["output"]
    assert_phrases(want, got, assignment)


@pytest.mark.parametrize("assignment", ALL)
def test_feedback_says_what_was_checked_and_hides_test_source(graded, assignment):
    out = graded[0]
    source = Path(exercises.get(assignment).hidden().__file__).read_text()
    secret_lines = [line.strip() for line in source.splitlines()
                    if line.strip().startswith(("assert", "if ", "for ", "fail(", "record"))]
    for name, want in expected(assignment).items():
        for test in results(out, name, assignment)["tests"]:
            # One error that stopped every call is said once; the checks it kept from
            # running say only that (autograder/judge.py, said_once).
            stopped = test["output"].startswith(STOPPED)
            if test["status"] == "failed" and want["failed"] != "all" and not stopped:
                assert test["output"].startswith("Checked: "), test["output"]
                assert "\nExpected: " in test["output"] and "\nGot: " in test["output"]
            assert not any(line in test["output"] for line in secret_lines)
            assert "Traceback" not in test["output"]
            assert "could not complete" not in test["output"], (name, test["output"])


@pytest.mark.parametrize("assignment", NEW)
def test_plain_python_reference_gets_full_marks(assignment, tmp_path):
    proc = grader_cli(samples_dir(assignment) / "reference.py", "--exercise", assignment,
                          "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert results(tmp_path, "reference")["score"] == 10


@pytest.mark.parametrize("assignment", NEW)
def test_nbgrader_autograde_agrees_on_every_total(handed_in, assignment):
    course = handed_in(assignment)
    nbgrader(course, "autograde", assignment, "--create")
    names = one_per_check(assignment)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        totals = {name: gb.find_submission(assignment, name).score for name in names}
    assert totals == {name: float(expected(assignment)[name]["score"]) for name in names}


def test_alias_facts_the_donation_report_tests_rely_on():
    """On the pinned JAX: the per-leaf outcomes the task and the samples describe.

    JAX pairs donated inputs with outputs first by exact shape and dtype, in
    output order; a leftover is then offered when an unclaimed output has its
    element count, and XLA aliases it to an unclaimed output of its byte size
    (not necessarily the one it was offered for). The cases ``halves``,
    ``bytes_order`` and ``bytes_only`` are there because a pairing guessed from
    sizes or order gets them wrong: this holds them to that.
    """
    import jax

    from autograder.exercises.donation_report.hidden.tests import truth
    from autograder.exercises.donation_report.probe import CASES, make_case

    flags = {name: [leaf["aliased"] for leaf in truth(name, 1)["leaves"]] for name in CASES}
    assert flags == {"nested": [True] * 3, "dataclass": [True] * 3, "width": [True, False],
                     "shape": [False, True], "unchanged": [True, True],
                     "not_returned": [True, False, True], "scalars": [True] * 3,
                     "reordered": [True, True], "reshape": [True, True],
                     "halves": [True], "bytes_order": [True, True], "bytes_only": [False],
                     "single": [True], "empty": []}
    outputs = {name: [leaf["output"] for leaf in truth(name, 1)["leaves"]] for name in CASES}
    # Reordered: each input lands in the output of its own shape, not in its position.
    assert outputs["reordered"] == ["[1]", "[0]"]
    # Transposed float32[a,b] and float32[] -> int32[]: same element count and bytes.
    assert outputs["reshape"] == ["['m']", "['n']"]
    # Not returned: the third leaf lands in output 1, not output 2.
    assert outputs["not_returned"] == ["[0]", None, "[1]"]
    # float32[n] returned as float16[n] and float16[2n]: offered for the first (its
    # element count), written into by the second (its bytes).
    assert outputs["halves"] == ["[1]"]
    # (matrix, vector) of equal bytes returned as (vector, matrix): each takes the output
    # of its exact shape, so the first leaf lands in output 1 (pairing by bytes in order
    # says output 0).
    assert outputs["bytes_order"] == ["[1]", "[0]"]
    # A bare array returned: output index {}, whose key path is the empty one.
    assert outputs["single"] == [""]
    for name in CASES:
        right = truth(name, 1)
        assert right["aliased_bytes"] == sum(e["nbytes"] for e in right["leaves"] if e["aliased"])
    # A float16 result for a float32 leaf has its element count but not its bytes:
    # JAX offers the buffer (buffer_donor), XLA does not alias it.
    fn, state, args = make_case("width", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        header = jax.jit(fn, donate_argnums=0).lower(state, *args).compile().as_text().splitlines()[0]
    assert "buffer_donor={ (1, {}) }" in header


def _alias(fn, *args):
    """``(input_output_alias items, buffer_donor text, alias bytes, warnings)`` of ``fn``
    compiled with argument 0 donated."""
    import re

    import jax

    from autograder.exercises.donation_report.hidden.tests import _alias_items

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=0).lower(*args).compile()
    header = compiled.as_text().splitlines()[0]
    donor = re.search(r"buffer_donor=\{[^}]*\}", header)
    return (_alias_items(header), donor.group(0) if donor else "",
            compiled.memory_analysis().alias_size_in_bytes,
            [str(w.message) for w in caught if "not usable" in str(w.message)])


def test_pairing_rule_stated_on_the_donation_report_page():
    """Each sentence of book/exercises/donation_report.md about which input lands where."""
    import jax.numpy as jnp

    p = jnp.ones((4, 6), jnp.float32)
    # First pass, output order: the first output of p's shape takes p's buffer.
    assert _alias(lambda p, g: (p * 2, p - g), p, p)[0] == {0: 0}
    # Same shapes: (q * 2, p + 1) puts q * 2 in p's buffer; different shapes: in q's.
    same = (jnp.ones(6), jnp.ones(6))
    assert _alias(lambda s: (s[1] * 2, s[0] + 1), same)[0] == {0: 0, 1: 1}
    other = (jnp.ones(3), jnp.ones(5))
    assert _alias(lambda s: (s[1] * 2, s[0] + 1), other)[0] == {1: 0, 0: 1}
    # Second pass, element count: transposed, flattened, int32 of the same width.
    for out in (lambda p: p.T * 2, lambda p: p.reshape(24) * 2, lambda p: p.astype(jnp.int32)):
        assert _alias(out, p) == ({0: 0}, "", 96, [])
    counter = jnp.zeros((), jnp.int32)
    assert _alias(lambda n: n + 1.0, counter)[:3] == ({0: 0}, "", 4)
    # Same element count, half the bytes: offered (buffer_donor), not aliased, no warning.
    assert _alias(lambda p: p.astype(jnp.float16), p) == ({}, "buffer_donor={ (0, {}", 0, [])
    # Offered by element count, aliased by bytes: float16[4] and float16[8] outputs of a
    # donated float32[4] (16 bytes): the float16[8] takes it.
    v = jnp.ones(4, jnp.float32)
    assert _alias(lambda v: (v.astype(jnp.float16), jnp.tile(v, 2).astype(jnp.float16)), v) == (
        {0: 1}, "", 16, [])
    # No unclaimed output with its element count: not offered, and JAX warns, even
    # though the float16[48] output has its 96 bytes.
    items, donor, size, warned = _alias(lambda p: jnp.ones(48, jnp.float16) * p.sum(), p)
    assert (items, donor, size) == ({}, "", 0) and len(warned) == 1
