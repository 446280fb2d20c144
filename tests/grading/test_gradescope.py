"""Gradescope autograder zips: built as docs/gradescope.md says, run as Gradescope runs them.

The zips come from ``make gradescope`` (one per exercise, default options)
and, for the hostile corpus, from ``python -m autograder gradescope`` with
the hostile suite's limits and ``--visibility after_published``. Each run
unpacks a zip into a temporary folder laid out as Gradescope lays out
``/autograder`` (``source/`` holding the zip, ``run_autograder`` copied to
the root, ``submission/``, ``results/``) and points ``GRADESCOPE_ROOT`` at
it. ``setup.sh`` is not run (the tests never pip-install): ``source/.venv``,
which setup.sh would create, links to the course's venv instead.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autograder import exercises
from autograder.judge import hidden_tests
from autograder.load import instructor_cells
from tests.course import REPO, grader_cli
from tests.grading import golden
from tests.grading.helpers import SAMPLES, expected, released_notebook, samples_dir, with_answer
from tests.grading.hostile_builders import BUILDERS

HOSTILE = Path(__file__).resolve().parent / "hostile"
HOSTILE_EXPECTED = json.loads((HOSTILE / "expected.json").read_text())
# as hostile/expected.json assumes, and as the hostile golden files are graded
HOSTILE_LIMITS = ["--timeout", f"{golden.LIMITS['hostile'][0]:g}", "--memory-mib",
                  str(golden.LIMITS["hostile"][1])]
VENV = Path(sys.executable).parent.parent
# Gradescope's results.json fields (gradescope-autograders.readthedocs.io, "Autograder
# Specifications": "Output format", "Controlling Test Case Visibility", "Output String Formatting").
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format",
              "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
              "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output",
               "output_format", "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
# A submission that tries to write Gradescope's results.json itself (the grader's
# package sits in <root>/source/autograder), then answers as hostile/wrong.py does.
FORGES_GRADESCOPE = """\
import json, pathlib
import autograder

forged = pathlib.Path(autograder.__file__).resolve().parents[2] / "results" / "results.json"
try:
    forged.write_text(json.dumps({"score": 10, "tests": [], "output": "forged"}))
except OSError:
    pass
""" + (HOSTILE / "wrong.py").read_text()


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    """``{exercise: zip}`` from ``make gradescope``, as docs/gradescope.md says to build them."""
    out = tmp_path_factory.mktemp("gradescope")
    # -o: the venv these tests run in is installed; make must not reinstall it under them.
    proc = subprocess.run(["make", "-o", ".venv/.installed", "gradescope", f"GRADESCOPE_OUT={out}"],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    return {p.name.removesuffix("-gradescope.zip"): p for p in out.glob("*.zip")}


@pytest.fixture(scope="module")
def hostile_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope-hostile")
    proc = grader_cli("gradescope", "update_with_donate", "--out", out,
                      "--visibility", "after_published", *HOSTILE_LIMITS, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out / "update_with_donate-gradescope.zip"


def gradescope_root(zip_path, root, venv=True):
    """Lay ``zip_path`` out under ``root`` as Gradescope does; return ``root``."""
    source = root / "source"
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            zf.extract(info, source)
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy2(source / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    if venv:  # what setup.sh creates
        (source / ".venv").symlink_to(VENV)
    return root


def run_autograder(root):
    """Run ``root/run_autograder`` as Gradescope does; return (results.json, process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True,
                          env=dict(env, GRADESCOPE_ROOT=str(root)), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "results" / "results.json").read_text()), proc


def assert_gradescope_shape(data, exercise, visibility):
    assert set(data) <= TOP_FIELDS, set(data) - TOP_FIELDS
    assert data.get("output_format", "simple_format") in FORMATS
    assert isinstance(data["score"], (int, float)) and isinstance(data["output"], str)
    titles = [title for _, title, _ in hidden_tests(exercise)]
    assert [t["name"] for t in data["tests"]] == titles
    for test in data["tests"]:
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert test["status"] in ("passed", "failed") and test["output"].strip()
        assert test["visibility"] == visibility
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert sum(t["max_score"] for t in data["tests"]) == sum(p for _, _, p in hidden_tests(exercise))


def _pick(exercise):
    """Right, wrong and broken samples of an exercise: (name, expectation)."""
    want = expected(exercise)
    full = sum(p for _, _, p in hidden_tests(exercise))
    wrong = next((n for n, w in want.items() if 0 < w["score"] < full), None)
    return [(n, want[n]) for n in ("reference", wrong, "syntax_error", "unattempted") if n in want]


SAMPLE_CASES = [(ex, name, want) for ex in exercises.names()
                if (samples_dir(ex) / "expected.json").exists() for name, want in _pick(ex)]
HOSTILE_CASES = ["solution", "wrong", "infinite_loop", "memory_bomb", "segfault",
                 "os_exit_zero", "reads_hidden_tests", "forges_results", "invalid_json"]


def test_make_gradescope_builds_one_zip_per_exercise(zips):
    assert sorted(zips) == sorted(exercises.names())
    for path in zips.values():
        names = zipfile.ZipFile(path).namelist()
        assert {"setup.sh", "run_autograder"} <= set(names)  # at the root, as Gradescope requires


@pytest.mark.parametrize("exercise,name,want", SAMPLE_CASES,
                         ids=[f"{ex}-{name}" for ex, name, _ in SAMPLE_CASES])
def test_sample_notebook_of_any_name_gets_its_grade(zips, released_course, tmp_path,
                                                    exercise, name, want):
    root = gradescope_root(zips[exercise], tmp_path)
    release = released_notebook(released_course, exercise)
    nb = release if name == "unattempted" else with_answer(
        release, (samples_dir(exercise) / f"{name}.py").read_text(), exercise)
    (root / "submission" / "My work (final).ipynb").write_text(json.dumps(nb))
    data, _ = run_autograder(root)
    assert_gradescope_shape(data, exercise, "visible")
    assert data["score"] == want["score"], data["output"]
    names = {title: fn for fn, title, _ in hidden_tests(exercise)}
    failed = {names[t["name"]] for t in data["tests"] if t["status"] == "failed"}
    assert failed == (set(names.values()) if want["failed"] == "all" else set(want["failed"]))
    assert want.get("output", "") in data["output"]


def test_a_py_file_is_graded_beside_editor_and_archive_leftovers(zips, tmp_path):
    root = gradescope_root(zips["update_with_donate"], tmp_path)
    shutil.copy(SAMPLES / "reference.py", root / "submission" / "answer.py")
    for leftover in ("__MACOSX/._answer.py", ".ipynb_checkpoints/answer-checkpoint.ipynb"):
        (root / "submission" / leftover).parent.mkdir()
        (root / "submission" / leftover).write_text("{}")
    data, proc = run_autograder(root)
    assert (data["score"], data["extra_data"]["status"]) == (10, "graded")
    assert "10/10 graded" in proc.stdout  # the instructor's line in Gradescope's stdout


@pytest.mark.parametrize("files,message", [
    ({}, "no notebook (.ipynb) or .py file was uploaded; upload your update_with_donate.ipynb"),
    ({"notes.txt": "hello"}, "no notebook (.ipynb) or .py file was uploaded (found only notes.txt)"),
    ({"a.ipynb": "{}", "b.py": "x = 1"}, "several files were uploaded (a.ipynb, b.py)"),
], ids=["none", "not-code", "several"])
def test_an_upload_without_one_notebook_gets_a_plain_message(zips, tmp_path, files, message):
    root = gradescope_root(zips["update_with_donate"], tmp_path)
    for name, text in files.items():
        (root / "submission" / name).write_text(text)
    data, _ = run_autograder(root)
    assert_gradescope_shape(data, "update_with_donate", "visible")
    assert data["score"] == 0 and message in data["output"]


@pytest.mark.parametrize("name", HOSTILE_CASES + ["forges_gradescope_results"])
def test_hostile_submission_gets_its_result(hostile_zip, released_course, tmp_path, name):
    root = gradescope_root(hostile_zip, tmp_path)
    release = released_notebook(released_course)
    if name in BUILDERS:
        payload = BUILDERS[name](release)
    else:
        answer = FORGES_GRADESCOPE if name == "forges_gradescope_results" else \
            (HOSTILE / f"{name}.py").read_text()
        payload = json.dumps(with_answer(release, answer)).encode()
    (root / "submission" / f"{name}.ipynb").write_bytes(payload)
    data, _ = run_autograder(root)
    assert_gradescope_shape(data, "update_with_donate", "after_published")
    want = HOSTILE_EXPECTED["wrong" if name == "forges_gradescope_results" else name]
    assert (data["score"], data["extra_data"]["status"]) == (want["score"], want["status"]), \
        data["output"]
    assert want["output"] in data["output"]


def test_results_are_written_even_when_the_grader_cannot_start(zips, tmp_path):
    root = gradescope_root(zips["update_with_donate"], tmp_path, venv=False)  # setup.sh never ran
    shutil.copy(SAMPLES / "reference.py", root / "submission" / "answer.py")
    data, _ = run_autograder(root)
    assert_gradescope_shape(data, "update_with_donate", "visible")
    assert data["score"] == 0 and "please tell your instructor" in data["output"]


def test_setup_installs_the_course_pins(zips):
    course = set((REPO / "requirements.txt").read_text().splitlines())
    for exercise, path in zips.items():
        zf = zipfile.ZipFile(path)
        setup = zf.read("setup.sh").decode()
        installs = [line for line in setup.splitlines() if "pip install" in line]
        assert installs == ['"$SOURCE/.venv/bin/python" -m pip install --no-cache-dir '
                            '-r "$SOURCE/requirements.txt"']
        assert ".venv/bin/python -m autograder.gradescope run" in zf.read("run_autograder").decode()
        assert subprocess.run(["bash", "-n"], input=setup, text=True).returncode == 0
        assert '"$PY" -m venv' in setup and "python3.12" in setup  # the course needs >= 3.12
        lines = zf.read("requirements.txt").decode().splitlines()
        assert set(lines) <= course, set(lines) - course
        pinned = {canonicalize_name(Requirement(line).name): line for line in lines}
        assert {"jax", "jaxlib", "numpy"} <= set(pinned)
        for name in pinned:  # everything each pin requires on this platform is pinned too
            import importlib.metadata

            for text in importlib.metadata.requires(name) or ():
                req = Requirement(text)
                if not req.marker or req.marker.evaluate({"extra": ""}):
                    assert canonicalize_name(req.name) in pinned, (exercise, name, text)
    assert "optax" in zipfile.ZipFile(zips["fix_training_loop"]).read("requirements.txt").decode()


def _code_lines(text):
    return [s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")]


def _runs(lines, k=5):
    return {tuple(lines[i:i + k]) for i in range(len(lines) - k + 1)}


def solution_runs():
    """Runs of 5 code lines of every exercise's solution that its learners are not given."""
    runs = set()
    for path in (REPO / "exercises" / "source").glob("*/*.ipynb"):
        given, solution = [], []
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["metadata"].get("nbgrader", {}).get("solution"):
                before, _, rest = source.partition("### BEGIN SOLUTION")
                inside, _, after = rest.partition("### END SOLUTION")
                solution.append(inside if rest else source)
                given += [before, after]
            else:
                given.append(source)
        given_runs = set().union(*(_runs(_code_lines(t)) for t in given))
        runs |= set().union(*(_runs(_code_lines(t)) for t in solution)) - given_runs
    return runs


def zip_texts(path):
    """``{member: text}``; a notebook's text is its cells' sources."""
    texts = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            text = zf.read(name).decode()
            if name.endswith(".ipynb"):
                cells = json.loads(text)["cells"]
                assert not any(c["metadata"].get("nbgrader", {}).get("solution") for c in cells)
                text = "\n".join("".join(c["source"]) for c in cells)
            texts[name] = text
    return texts


def test_zips_hold_no_solution_and_no_other_exercise(zips):
    runs = solution_runs()
    assert len(runs) > 20  # every exercise has a solution worth hiding
    for exercise, path in zips.items():
        texts = zip_texts(path)
        for name, text in texts.items():
            assert "BEGIN SOLUTION" not in text, name
            assert not runs & _runs(_code_lines(text)), f"solution text in {path.name}:{name}"
        own = {f"autograder/exercises/{exercise}/__init__.py", f"autograder/exercises/{exercise}/probe.py",
               f"autograder/exercises/{exercise}/hidden/tests.py",
               f"exercises/source/{exercise}/{exercise}.ipynb"}
        for other in set(exercises.names()) - {exercise}:
            assert not [n for n in texts if other in n], (exercise, other)
        assert own <= set(texts)
        notebook = json.loads(zipfile.ZipFile(path).read(f"exercises/source/{exercise}/{exercise}.ipynb"))
        ids = [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]]
        assert ids == list(instructor_cells(exercise))  # the read-only cells grading restores
