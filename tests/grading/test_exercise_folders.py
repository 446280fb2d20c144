"""Every registered exercise has every part, and every exercise folder is registered.

Reads files only (no kernel, no JAX, no release), so it fails in a second,
naming what is missing, when an exercise is added by half. The parts are
those of :mod:`autograder.exercises` plus the two that live where their tools
want them: the nbgrader source notebook and the book page (with its _toc.yml entry
and its row in the exercises' index table).
"""
import ast
import json
import shutil

import pytest

from autograder import exercises
from tests.course import REPO

EXAMPLE = exercises.names()[0]


POINTS = 10  # every exercise is worth 10 (the class views and graders assume it)
STANDARD_SAMPLES = ("reference", "misnamed", "syntax_error")  # files; "unattempted" is expected.json's only


def _parts(root, name):
    folder = root / "autograder" / "exercises" / name
    return {"metadata": folder / "__init__.py",
            "probe": folder / "probe.py",
            "requirement rows": folder / "requirements.py",
            "hidden tests": folder / "hidden" / "tests.py",
            "hidden package": folder / "hidden" / "__init__.py",
            "samples' expected grades": folder / "hidden" / "samples" / "expected.json",
            "nbgrader source notebook": root / "exercises" / "source" / name / f"{name}.ipynb",
            "book page": root / "book" / "exercises" / f"{name}.md"}


def _module(path):
    return ast.parse(path.read_text("utf-8"))


def _constants(path):
    """Module-level ``NAME = <literal>`` assignments of ``path``."""
    return {t.id: ast.literal_eval(node.value) for node in _module(path).body
            if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
            and _literal(node.value)}


def _literal(node):
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _assigned(path):
    """Names ``path`` assigns at module level."""
    return {t.id for node in _module(path).body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _graded(path):
    """``[(test name, points)]`` of each ``@graded(points, title)`` test in ``path``, in order."""
    return [(node.name, ast.literal_eval(d.args[0])) for node in _module(path).body
            if isinstance(node, ast.FunctionDef) for d in node.decorator_list
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "graded"]


def _graded_points(path):
    """Points of each ``@graded(points, title)`` test in ``path``, in order."""
    return [points for _, points in _graded(path)]


def _metadata(name, root, meta, points):
    if not meta.is_file():
        return []
    found, where = _constants(meta), meta.relative_to(root)
    gone = [f"{key} in {where}" for key in ("TITLE", "POINTS", "PRELOAD") if key not in found]
    if "POINTS" in found and found["POINTS"] != POINTS:
        gone.append(f"POINTS = {POINTS} in {where} (it says {found['POINTS']})")
    if points and "POINTS" in found and sum(points) != found["POINTS"]:
        gone.append(f"hidden tests worth POINTS = {found['POINTS']} (they add up to {sum(points)})")
    return gone


def _samples(root, samples):
    if not samples.is_file():
        return []
    where = samples.relative_to(root)
    listed = set(json.loads(samples.read_text())) - {"_comment", "unattempted"}
    files = {p.stem for p in samples.parent.glob("*.py")}
    gone = [f"sample {s}.py (listed in {where})" for s in sorted(listed - files)]
    gone += [f"expected grade of sample {s}.py in {where}" for s in sorted(files - listed)]
    if "reference" not in listed:
        gone.append(f"a full-marks sample, reference.py, in {samples.parent.relative_to(root)}")
    gone += [f"the standard sample {s}.py in {samples.parent.relative_to(root)}"
             for s in STANDARD_SAMPLES[1:] if s not in listed]
    if "unattempted" not in json.loads(samples.read_text()):
        gone.append(f"the expected grade of the notebook as handed out, \"unattempted\", in {where}")
    return gone


def _notebook(name, root, source, tests):
    """What the source notebook lacks: the answer cell (grade id ``name``), the
    ``self_check`` cell, and one graded cell per hidden test (grade id and points the
    test's, in the tests' order, calling the bridge with both names)."""
    if not source.is_file():
        return []
    where = source.relative_to(root)
    cells = [(c["metadata"].get("nbgrader", {}), "".join(c["source"]))
             for c in json.loads(source.read_text("utf-8"))["cells"]]
    gone = []
    if not any(meta.get("grade_id") == name and meta.get("solution") for meta, _ in cells):
        gone.append(f"the answer cell (grade_id {name!r}, solution) in {where}")
    if not any(meta.get("grade_id") == "self_check" for meta, _ in cells):
        gone.append(f"the self-check cell (grade_id 'self_check') in {where}")
    graded = [(meta["grade_id"], meta.get("points")) for meta, _ in cells if meta.get("grade")]
    if tests is not None and graded != tests:
        gone.append(f"graded cells {tests} (grade_id, points: the hidden tests') in {where}, "
                    f"not {graded} (python -m autograder.new_exercise {name} --cells writes them)")
    gone += [f"the call check({name!r}, {meta['grade_id']!r}) in graded cell {meta['grade_id']} of {where}"
             for meta, text in cells if meta.get("grade")
             and f'check("{name}", "{meta["grade_id"]}")' not in text]
    return gone


def _page(name, root, page):
    """What the page, its _toc.yml entry and its index row lack."""
    gone = []
    if page.is_file():
        text = page.read_text("utf-8")
        wants = {f"its label (exercise-{name.replace('_', '-')})= on the first line":
                 text.startswith(f"(exercise-{name.replace('_', '-')})=\n"),
                 f"its notebook's download, ../../exercises/release/{name}/{name}.ipynb":
                 f"<../../exercises/release/{name}/{name}.ipynb>`" in text,
                 f"its graded checks, a {{graded-checks}} {name} block": f"```{{graded-checks}} {name}\n```" in text,
                 f"its submit form, <div data-grader-exercise=\"{name}\">": f'data-grader-exercise="{name}"' in text}
        gone += [f"{what} in {page.relative_to(root)}" for what, there in wants.items() if not there]
        if f"book/exercises/{name}\n" not in (root / "_toc.yml").read_text():
            gone.append(f"the page book/exercises/{name} in _toc.yml")
    index = root / "book" / "exercises" / "index.md"
    if index.is_file() and f"| {{doc}}`{name}` |" not in index.read_text():
        gone.append(f"a row for {name} in book/exercises/index.md's table")
    return gone


def missing(name, root=REPO):
    """What of exercise ``name`` is missing from the tree at ``root``, in words ([] when whole).
    Reads files only: every rule here is one a newly laid out exercise
    (``python -m autograder.new_exercise``) meets."""
    parts = _parts(root, name)
    gone = [f"{what} ({path.relative_to(root)})" for what, path in parts.items() if not path.is_file()]
    tests = parts["hidden tests"]
    graded = _graded(tests) if tests.is_file() else None
    if tests.is_file() and not graded:
        gone.append(f"graded hidden tests (@graded) in {tests.relative_to(root)}")
    gone += _metadata(name, root, parts["metadata"], [p for _, p in graded or []])
    if parts["probe"].is_file() and not any(
            isinstance(n, ast.FunctionDef) and n.name == "observe" for n in _module(parts["probe"]).body):
        gone.append(f"observe(ns, seed) in {parts['probe'].relative_to(root)}")
    rows = parts["requirement rows"]
    if rows.is_file() and "REQUIREMENTS" not in _assigned(rows):
        gone.append(f"REQUIREMENTS in {rows.relative_to(root)}")
    gone += _samples(root, parts["samples' expected grades"])
    gone += _notebook(name, root, parts["nbgrader source notebook"], graded)
    gone += _page(name, root, parts["book page"])
    return gone


@pytest.mark.parametrize("name", exercises.names())
def test_every_registered_exercise_is_whole(name):
    assert missing(name) == [], f"{name} is missing: " + "; ".join(missing(name))


def test_every_exercise_folder_is_registered():
    folders = {p.name for p in exercises.FOLDER.iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert sorted(folders - set(exercises.names())) == [], "folders not registered in NAMES"
    assert sorted(set(exercises.names()) - folders) == [], "registered without a folder"


def test_registry_reads_the_metadata():
    for name in exercises.names():
        exercise = exercises.get(name)
        assert isinstance(exercise.title, str) and exercise.title
        assert exercise.points == sum(p for _, _, p in _hidden(name))
        assert all(isinstance(m, str) for m in exercise.preload)
    with pytest.raises(ValueError, match="unknown exercise 'nope'; one of update_with_donate"):
        exercises.get("nope")


def _hidden(name):
    from autograder.judge import hidden_tests

    return hidden_tests(name)


def _copy(tmp_path, name):
    """The parts of exercise ``name`` (and _toc.yml) in a tree at ``tmp_path``."""
    for path in _parts(REPO, name).values():
        source = path.parent if path.name in ("__init__.py", f"{name}.ipynb") else path
        target = tmp_path / source.relative_to(REPO)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    shutil.copy(REPO / "_toc.yml", tmp_path / "_toc.yml")
    shutil.copy(REPO / "book" / "exercises" / "index.md", tmp_path / "book" / "exercises" / "index.md")
    return tmp_path


REMOVALS = {  # a part taken away -> the words missing() must say
    "metadata": ("autograder/exercises/{n}/__init__.py", "metadata (autograder/exercises/{n}/__init__.py)"),
    "probe": ("autograder/exercises/{n}/probe.py", "probe (autograder/exercises/{n}/probe.py)"),
    "hidden tests": ("autograder/exercises/{n}/hidden/tests.py",
                     "hidden tests (autograder/exercises/{n}/hidden/tests.py)"),
    "expected grades": ("autograder/exercises/{n}/hidden/samples/expected.json", "samples' expected grades"),
    "a sample": ("autograder/exercises/{n}/hidden/samples/reference.py", "sample reference.py (listed in"),
    "source notebook": ("exercises/source/{n}/{n}.ipynb", "nbgrader source notebook (exercises/source/{n}/{n}.ipynb)"),
    "page": ("book/exercises/{n}.md", "book page (book/exercises/{n}.md)"),
    "requirement rows": ("autograder/exercises/{n}/requirements.py",
                         "requirement rows (autograder/exercises/{n}/requirements.py)"),
    "a standard sample": ("autograder/exercises/{n}/hidden/samples/misnamed.py", "sample misnamed.py (listed in"),
}


@pytest.mark.parametrize("part", REMOVALS)
def test_a_removed_part_is_named(tmp_path, part):
    root = _copy(tmp_path, EXAMPLE)
    assert missing(EXAMPLE, root) == []
    path, words = (s.format(n=EXAMPLE) for s in REMOVALS[part])
    (root / path).unlink()
    assert any(words in m for m in missing(EXAMPLE, root)), missing(EXAMPLE, root)


def test_an_edited_part_is_named(tmp_path):
    root = _copy(tmp_path, EXAMPLE)
    meta = root / "autograder" / "exercises" / EXAMPLE / "__init__.py"
    meta.write_text(meta.read_text().replace("POINTS = 10", "POINTS = 11"))
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace(f"book/exercises/{EXAMPLE}\n", "\n"))
    index = root / "book" / "exercises" / "index.md"
    index.write_text(index.read_text().replace(f"| {{doc}}`{EXAMPLE}` |", "| |"))
    assert missing(EXAMPLE, root) == [f"POINTS = 10 in autograder/exercises/{EXAMPLE}/__init__.py (it says 11)",
                                      "hidden tests worth POINTS = 11 (they add up to 10)",
                                      f"the page book/exercises/{EXAMPLE} in _toc.yml",
                                      f"a row for {EXAMPLE} in book/exercises/index.md's table"]

