"""What a learner reads when a submission cannot be graded as handed in.

Each case is graded by the course's command as an instructor runs it; the
grading service calls the same pipeline with the exercise its form names.
"""
import json
import re
from pathlib import Path

import pytest

from autograder.judge import NOT_RUN, hidden_tests
from autograder.load import MAX_FILE_BYTES
from tests.course import grader_cli
from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.grading.test_samples import results


def _texts(result):
    return [result["output"]] + [t["output"] for t in result["tests"]]


def test_the_stub_is_said_to_be_unattempted_once(released_course, tmp_path):
    path = tmp_path / "update_with_donate.ipynb"
    path.write_text(json.dumps(released_notebook(released_course)))
    assert grader_cli(path, "--out", tmp_path / "out").returncode == 0
    result = results(tmp_path / "out", "update_with_donate")
    said = " ".join(_texts(result))
    assert said.count("not attempted") == 1, said
    assert result["extra_data"]["status"] == "not attempted"
    assert {t["output"] for t in result["tests"]} == {NOT_RUN}


@pytest.fixture(scope="module")
def plain_graded(tmp_path_factory):
    """``(out, CompletedProcess)``: one run of the command over three plain ``.py``
    answers (reference, no_donation, syntax_error), as an instructor grades a folder."""
    out = tmp_path_factory.mktemp("plain") / "out"
    proc = grader_cli(*(SAMPLES / f"{n}.py" for n in ("reference", "no_donation", "syntax_error")),
                      "--out", out)
    return out, proc


def test_a_syntax_error_is_said_before_what_it_left_undefined(plain_graded):
    out, proc = plain_graded
    assert proc.returncode == 0, proc.stderr
    output = results(out, "syntax_error")["output"]
    assert "has a syntax error at line 6" in output.split(";")[0], output
    assert output.endswith("`update_with_donate` is not defined"), output


def test_a_graded_result_says_how_many_checks_passed(plain_graded):
    out, proc = plain_graded
    assert proc.returncode == 0, proc.stderr
    assert (results(out, "reference")["score"], results(out, "no_donation")["score"]) == (10, 6)
    assert results(out, "reference")["output"] == "All 8 checks passed."
    assert results(out, "no_donation")["output"] == "5 of 8 checks passed."
    assert "Graded." not in json.dumps([results(out, n) for n in ("reference", "no_donation")])


OTHERS = ["donation_report", "fix_training_loop"]


def _other_course():
    """nbgrader's own test notebooks: nbgrader cells, none of this course's."""
    import nbgrader.tests.apps.files as files
    folder = Path(files.__file__).parent
    names = ["autotest-simple-unchanged", "autotest-multi-unchanged", "submitted-unchanged"]
    return [folder / f"{n}.ipynb" for n in names if (folder / f"{n}.ipynb").exists()]


@pytest.fixture(scope="module")
def wrong_exercise(released_course, tmp_path_factory):
    """``(out, CompletedProcess)``: one run with ``--exercise update_with_donate`` (as the
    service's form for it grades) over the released notebooks of :data:`OTHERS` and
    :func:`_other_course`'s."""
    root = tmp_path_factory.mktemp("wrong-exercise")
    for other in OTHERS:
        (root / f"{other}.ipynb").write_text(json.dumps(released_notebook(released_course, other)))
    proc = grader_cli(*(root / f"{o}.ipynb" for o in OTHERS), *_other_course(),
                      "--exercise", "update_with_donate", "--out", root / "out")
    return root / "out", proc


@pytest.mark.parametrize("other", OTHERS)
def test_a_notebook_for_another_exercise_is_named(wrong_exercise, other):
    """Uploaded to update_with_donate's form (here: --exercise), it is not called a stub."""
    out, proc = wrong_exercise
    assert proc.returncode == 0, proc.stderr
    result = results(out, other)
    assert result["extra_data"]["status"] == "wrong exercise"
    assert result["score"] == 0
    assert f"the notebook of the exercise {other}, handed in for update_with_donate" in result["output"]
    assert "not attempted" not in " ".join(_texts(result))
    assert [t["name"] for t in result["tests"]] == [t for _, t, _ in hidden_tests("update_with_donate")]


def test_a_file_too_large_even_for_outputs_says_to_clear_them(released_course, tmp_path):
    nb = with_answer(released_notebook(released_course), (SAMPLES / "reference.py").read_text())
    answer = next(c for c in nb["cells"] if c["cell_type"] == "code")
    answer["outputs"] = [{"output_type": "stream", "name": "stdout",
                          "text": "x" * (MAX_FILE_BYTES + 2**20)}]
    path = tmp_path / "huge.ipynb"
    path.write_text(json.dumps(nb))
    assert grader_cli(path, "--out", tmp_path / "out").returncode == 0
    result = results(tmp_path / "out", "huge")
    assert result["extra_data"]["status"] == "unreadable"
    mib = -(-path.stat().st_size // 2**20)  # rounded up
    assert re.search(rf"the file is {mib} MiB, over the 128 MiB limit .*Clear Outputs of All Cells",
                     result["output"]), result["output"]


def test_the_documentation_states_the_size_limits_the_loader_holds():
    """docs/security.md tells instructors how large a notebook may be: load.py's limits."""
    from autograder.load import MAX_SOURCE_BYTES
    from tests.course import REPO

    text = " ".join((REPO / "docs" / "security.md").read_text().split())
    assert f"a notebook file up to {MAX_FILE_BYTES // 2**20} MiB is read" in text
    assert f"then up to {MAX_SOURCE_BYTES // 2**20} MiB of code is graded" in text


def test_a_notebook_of_another_course_is_not_called_a_stub(wrong_exercise):
    """nbgrader's own test notebooks have nbgrader cells, none of this course's."""
    out, proc = wrong_exercise
    paths = _other_course()
    assert len(paths) >= 2
    assert proc.returncode == 0, proc.stderr
    for path in paths:
        result = results(out, path.stem)
        assert result["extra_data"]["status"] == "wrong exercise", result["output"]
        assert "not the update_with_donate exercise's" in result["output"]
        assert "not attempted" not in " ".join(_texts(result))
