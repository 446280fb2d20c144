"""``python -m autograder.new_exercise NAME`` lays out an exercise that is whole at once.

The command runs into a temporary copy of the course tree (the registry, _toc.yml, the
exercises' index and the lessons), never into this checkout; the folder checks
(tests/grading/test_exercise_folders.py's ``missing``) and the requirement rules
(tests/grading/test_requirements.py's, read from the files) then hold for the result,
and each rule broken by an edit is named. So the template cannot rot. Fast: files only.
"""
import ast
import json
import subprocess
import sys

import pytest

from autograder import exercises, new_exercise
from tests.course import REPO
from tests.grading.test_exercise_folders import POINTS, _graded, missing

# a name no exercise of the course has (the copy's registry is this checkout's)
NEW = next(n for n in (f"laid_out_{i}" for i in range(100)) if n not in exercises.names())


def course_tree(root):
    """The files of this checkout a new exercise is registered in, copied under ``root``."""
    for path in ("autograder/exercises/__init__.py", "_toc.yml", "book/exercises/index.md",
                 *(str(p.relative_to(REPO)) for p in (REPO / "book" / "lessons").glob("*.md"))):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes((REPO / path).read_bytes())
    return root


@pytest.fixture
def laid_out(tmp_path):
    """A copy of the course tree with ``NEW`` laid out (the command's ``main``): the root."""
    root = course_tree(tmp_path)
    assert new_exercise.main([NEW, "--root", str(root), "--title", "Donate the params in an SGD loop"]) == 0
    return root


def test_the_command_line_lays_it_out(tmp_path):
    root = course_tree(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "autograder.new_exercise", NEW, "--root", str(root)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote autograder/exercises/{NEW}/hidden/tests.py" in proc.stdout
    assert missing(NEW, root) == []


def test_a_laid_out_exercise_is_whole_and_registered(laid_out):
    assert missing(NEW, laid_out) == []
    registry = (laid_out / "autograder" / "exercises" / "__init__.py").read_text()
    assert exercises._read_names(registry) == (*exercises.names(), NEW)
    assert (laid_out / "_toc.yml").read_text().endswith(f"book/exercises/{NEW}\n")
    notebook = json.loads((laid_out / "exercises" / "source" / NEW / f"{NEW}.ipynb").read_text())
    order = [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]]
    assert order[:5] == ["task_statement", NEW, "self_check_intro", "self_check", "graded_intro"]
    assert "".join(notebook["cells"][5]["source"]).startswith("# Graded (5 points): values: ")


def _rows(path):
    """``{row id: (checks...)}`` of the ``Requirement(...)`` rows in ``path`` (read, not imported)."""
    calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "Requirement"]
    return {ast.literal_eval(c.args[0]): ast.literal_eval(c.args[3]) for c in calls}


def test_its_samples_prove_every_requirement_row(laid_out):
    """test_requirements.py's rules, on the laid out files: each row has two samples that
    fail exactly its checks and lose exactly their points; every check is in a row."""
    folder = laid_out / "autograder" / "exercises" / NEW
    points = dict(_graded(folder / "hidden" / "tests.py"))
    rows = _rows(folder / "requirements.py")
    want = json.loads((folder / "hidden" / "samples" / "expected.json").read_text())
    assert sorted(c for checks in rows.values() for c in checks) == sorted(points)
    for row, checks in rows.items():
        mine = {n: w for n, w in want.items() if isinstance(w, dict) and w.get("violates") == row}
        assert len(mine) >= 2, row
        for name, w in mine.items():
            assert sorted(w["failed"]) == sorted(checks), name
            assert w["score"] == POINTS - sum(points[c] for c in checks), name
            assert set(w["says"]) & set(checks), name
    assert want["reference"] == {"score": POINTS, "failed": []}


def _edit(path, old, new):
    text = path.read_text("utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), "utf-8")


EDITS = {  # a rule broken by an edit -> (file, old text, new text, the words missing() must say)
    "no self-check": ("exercises/source/{n}/{n}.ipynb", '"grade_id": "self_check"', '"grade_id": "check"',
                      "the self-check cell (grade_id 'self_check')"),
    "no answer cell": ("exercises/source/{n}/{n}.ipynb", '"grade_id": "{n}"', '"grade_id": "answer"',
                       "the answer cell (grade_id '{n}', solution)"),
    "a graded cell's id": ("exercises/source/{n}/{n}.ipynb", '"grade_id": "test_values"',
                           '"grade_id": "test_value"', "(grade_id, points: the hidden tests')"),
    "a graded cell's points": ("exercises/source/{n}/{n}.ipynb", '"points": 5', '"points": 4',
                               "(grade_id, points: the hidden tests')"),
    "a graded cell's call": ("exercises/source/{n}/{n}.ipynb", 'check(\\"{n}\\", \\"test_values\\")',
                             'check(\\"{n}\\", \\"test_value\\")', "the call check('{n}', 'test_values')"),
    "points not 10": ("autograder/exercises/{n}/__init__.py", "POINTS = 10", "POINTS = 12",
                      "POINTS = 10 in autograder/exercises/{n}/__init__.py (it says 12)"),
    "no REQUIREMENTS": ("autograder/exercises/{n}/requirements.py", "REQUIREMENTS = (", "ROWS = (",
                        "REQUIREMENTS in autograder/exercises/{n}/requirements.py"),
    "no unattempted": ("autograder/exercises/{n}/hidden/samples/expected.json", '"unattempted"',
                       '"unattempted_"', '"unattempted", in'),
    "the page's label": ("book/exercises/{n}.md", "(exercise-", "(exercises-", "its label"),
    "the page's download": ("book/exercises/{n}.md", "exercises/release/{n}/{n}.ipynb>", "{n}.ipynb>",
                            "its notebook's download"),
    "the page's checks": ("book/exercises/{n}.md", "{{graded-checks}} {n}", "{{graded-checks}}",
                          "its graded checks"),
    "the page's form": ("book/exercises/{n}.md", 'data-grader-exercise="{n}"', 'data-grader="{n}"',
                        "its submit form"),
    "the toc entry": ("_toc.yml", "book/exercises/{n}\n", "\n", "the page book/exercises/{n} in _toc.yml"),
}


@pytest.mark.parametrize("rule", EDITS)
def test_a_broken_rule_is_named(laid_out, rule):
    path, old, new, words = (s.format(n=NEW) for s in EDITS[rule])
    _edit(laid_out / path, old, new)
    assert any(words in m for m in missing(NEW, laid_out)), missing(NEW, laid_out)


@pytest.mark.parametrize("sample", ["misnamed", "syntax_error"])
def test_a_removed_standard_sample_is_named(laid_out, sample):
    folder = laid_out / "autograder" / "exercises" / NEW / "hidden" / "samples"
    expected = folder / "expected.json"
    want = json.loads(expected.read_text())
    del want[sample]
    expected.write_text(json.dumps(want))
    (folder / f"{sample}.py").unlink()
    assert f"the standard sample {sample}.py in autograder/exercises/{NEW}/hidden/samples" in missing(NEW, laid_out)


def test_graded_cells_are_written_again_from_the_hidden_tests(laid_out):
    tests = laid_out / "autograder" / "exercises" / NEW / "hidden" / "tests.py"
    _edit(tests, '@graded(5, "x is donated")', '@graded(4, "x is donated")')
    _edit(tests, "\n\n@graded(5, \"values", "\n\n@graded(1, \"runs\")\ndef test_runs(obs):\n"
          "    \"\"\"It runs.\"\"\"\n\n\n@graded(5, \"values")
    assert any("(grade_id, points: the hidden tests')" in m for m in missing(NEW, laid_out))
    new_exercise.main([NEW, "--cells", "--root", str(laid_out)])
    assert missing(NEW, laid_out) == []


def test_nothing_is_written_when_a_part_is_in_the_way(laid_out, capsys):
    before = {p: p.read_bytes() for p in laid_out.rglob("*") if p.is_file()}
    assert new_exercise.main([NEW, "--root", str(laid_out)]) == 2
    said = capsys.readouterr().err
    assert f"{NEW} is already registered in NAMES" in said and f"book/exercises/{NEW}.md exists" in said
    for bad in ("Bad-Name", "x", "class"):
        with pytest.raises(new_exercise.Refused, match="is not a name for an exercise"):
            new_exercise.lay_out(bad, laid_out)
    with pytest.raises(new_exercise.Refused, match="no lesson book/lessons/nope.md"):
        new_exercise.lay_out("fresh_one", laid_out, lesson="nope")
    assert {p: p.read_bytes() for p in laid_out.rglob("*") if p.is_file()} == before
