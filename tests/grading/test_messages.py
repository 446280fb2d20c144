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


def test_a_syntax_error_is_said_before_what_it_left_undefined(tmp_path):
    proc = grader_cli(SAMPLES / "syntax_error.py", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    output = results(tmp_path, "syntax_error")["output"]
    assert "has a syntax error at line 6" in output.split(";")[0], output
    assert output.endswith("`update_with_donate` is not defined"), output


def test_a_graded_result_says_how_many_checks_passed(tmp_path):
    proc = grader_cli(SAMPLES / "reference.py", SAMPLES / "no_donation.py", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert results(tmp_path, "reference")["output"] == "All 8 checks passed."
    assert results(tmp_path, "no_donation")["output"] == "5 of 8 checks passed."
    assert "Graded." not in json.dumps([results(tmp_path, n) for n in ("reference", "no_donation")])


@pytest.mark.parametrize("other", ["donation_report", "fix_training_loop"])
def test_a_notebook_for_another_exercise_is_named(released_course, tmp_path, other):
    """Uploaded to update_with_donate's form (here: --exercise), it is not called a stub."""
    path = tmp_path / f"{other}.ipynb"
    path.write_text(json.dumps(released_notebook(released_course, other)))
    proc = grader_cli(path, "--exercise", "update_with_donate", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    result = results(tmp_path / "out", other)
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


def test_a_notebook_of_another_course_is_not_called_a_stub(tmp_path):
    """nbgrader's own test notebooks have nbgrader cells, none of this course's."""
    import nbgrader.tests.apps.files as files
    folder = Path(files.__file__).parent
    names = ["autotest-simple-unchanged", "autotest-multi-unchanged", "submitted-unchanged"]
    paths = [folder / f"{n}.ipynb" for n in names if (folder / f"{n}.ipynb").exists()]
    assert len(paths) >= 2
    proc = grader_cli(*paths, "--exercise", "update_with_donate", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    for path in paths:
        result = results(tmp_path / "out", path.stem)
        assert result["extra_data"]["status"] == "wrong exercise", result["output"]
        assert "not the update_with_donate exercise's" in result["output"]
        assert "not attempted" not in " ".join(_texts(result))
