"""Lay out a new exercise from its name: ``python -m autograder.new_exercise NAME``.

Writes every part an exercise needs (docs/exercises.md) from the templates in
``autograder/exercise_template/`` (``string.Template`` files; the notebook is built
with nbformat in the course's cell layout) and registers it: its name in ``NAMES``
(``autograder/exercises/__init__.py``), its page in ``_toc.yml`` and its row in
``book/exercises/index.md``. The placeholder task grades as it stands, so every tier
passes before the author replaces it with theirs.

``python -m autograder.new_exercise NAME --cells`` writes the graded cells of NAME's
source notebook again from its hidden tests (after tests were added, removed or
re-weighted), keeping every other cell.

Nothing is written when anything is in the way (an existing part, a registered name,
a lesson that does not exist): :class:`Refused` says what, before any file changes.
"""
from __future__ import annotations

import argparse
import ast
import keyword
import re
import string
import sys
from pathlib import Path

import nbformat

from autograder.defaults import CHECKOUT

TEMPLATE = Path(__file__).resolve().parent / "exercise_template"
NAME = re.compile(r"[a-z][a-z0-9_]{2,40}")
NBGRADER = {"schema_version": 3, "task": False}
HIDDEN = ('### BEGIN HIDDEN TESTS\n__import__("autograder.nbgrader_bridge").nbgrader_bridge.check('
          '"{name}", "{test}")\n### END HIDDEN TESTS')


class Refused(ValueError):
    """The exercise cannot be laid out; the message says why. Nothing was written."""


def targets(name, root=CHECKOUT):
    """``{template path (relative to TEMPLATE): target path}`` of the files made from
    templates, the source notebook (``None`` key) included."""
    found = {t.relative_to(TEMPLATE): root / "autograder" / "exercises" / name /
             t.relative_to(TEMPLATE / "exercise").with_suffix("")
             for t in sorted((TEMPLATE / "exercise").rglob("*.tmpl"))}
    found[Path("page.md.tmpl")] = root / "book" / "exercises" / f"{name}.md"
    found[None] = root / "exercises" / "source" / name / f"{name}.ipynb"
    return found


def graded_tests(tests_py):
    """``[(test name, title, points)]`` of the ``@graded(points, title)`` functions in the
    file ``tests_py`` (read, not imported), in file order."""
    found = []
    for node in ast.parse(Path(tests_py).read_text("utf-8")).body:
        for d in getattr(node, "decorator_list", []):
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "graded":
                found.append((node.name, ast.literal_eval(d.args[1]), ast.literal_eval(d.args[0])))
    return found


def graded_cell(name, test, title, points):
    """The source notebook's cell of one hidden test: grade id and points are the test's."""
    words = f"{points} point{'s' if points != 1 else ''}"
    source = f"# Graded ({words}): {title}.\n" + HIDDEN.format(name=name, test=test)
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": {
        **NBGRADER, "grade": True, "grade_id": test, "locked": True, "points": points,
        "solution": False}})


def _cell(kind, grade_id, text, solution=False):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(text.rstrip("\n"), metadata={"nbgrader": {
        **NBGRADER, "grade": False, "grade_id": grade_id, "locked": not solution,
        "solution": solution}})


def notebook(name, fill, tests):
    """The nbgrader source notebook: task statement, answer cell (grade id ``name``),
    self-check, then one graded cell per hidden test in ``tests`` (:func:`graded_tests`)."""
    text = {p.name.split(".")[0]: string.Template(p.read_text("utf-8")).substitute(fill)
            for p in (TEMPLATE / "notebook").glob("*.tmpl")}
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    nb.cells = [_cell("markdown", "task_statement", text["task_statement"]),
                _cell("code", name, text["answer"], solution=True),
                _cell("markdown", "self_check_intro", text["self_check_intro"]),
                _cell("code", "self_check", text["self_check"]),
                _cell("markdown", "graded_intro", text["graded_intro"])]
    nb.cells += [graded_cell(name, *test) for test in tests]
    return nb


def _first_lesson(root):
    found = re.search(r"^\s*- file: book/lessons/(\w+)\s*$", (root / "_toc.yml").read_text(), re.M)
    if not found:
        raise Refused("_toc.yml lists no lesson (book/lessons/...) to read first")
    return found.group(1)


def _refusals(name, root, lesson):
    from autograder import exercises

    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        return [f"{name!r} is not a name for an exercise: lowercase letters, digits and _, "
                "3 to 41 of them, starting with a letter (it is a Python module and a function)"]
    said = []
    registry = root / "autograder" / "exercises" / "__init__.py"
    if name in exercises._read_names(registry.read_text("utf-8")):
        said.append(f"{name} is already registered in NAMES ({registry.relative_to(root)})")
    folder = root / "autograder" / "exercises" / name
    said += [f"{p.relative_to(root)} exists" for p in [folder, *targets(name, root).values()]
             if p.exists()]
    if not (root / "book" / "lessons" / f"{lesson}.md").is_file():
        said.append(f"no lesson book/lessons/{lesson}.md to read first (--lesson)")
    if not re.search(r"^\s*- file: book/exercises/\w+\s*$", (root / "_toc.yml").read_text(), re.M):
        said.append("_toc.yml has no exercise page (book/exercises/...) to put this one after")
    if not _last_row(root / "book" / "exercises" / "index.md"):
        said.append("book/exercises/index.md has no exercise table to add a row to")
    return said


def _last_row(index):
    """Index (0-based) of the last line of the exercises' table in ``index``, or None."""
    lines = index.read_text("utf-8").splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("| {doc}`")]
    return rows[-1] if rows else None


def _insert_after(path, i, line):
    lines = path.read_text("utf-8").splitlines(keepends=True)
    lines.insert(i + 1, line if line.endswith("\n") else line + "\n")
    path.write_text("".join(lines), "utf-8")


def register(name, root=CHECKOUT):
    """Add ``name`` at the end of ``NAMES`` (keeping the file's other text), of
    ``_toc.yml``'s exercise pages and of ``book/exercises/index.md``'s table (the row
    from ``index_row.md.tmpl`` is written by :func:`lay_out`)."""
    registry = root / "autograder" / "exercises" / "__init__.py"
    text = registry.read_text("utf-8")
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.Assign)
                and [getattr(t, "id", None) for t in n.targets] == ["NAMES"])
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:node.value.lineno - 1]) + node.value.col_offset
    end = sum(len(line) for line in lines[:node.value.end_lineno - 1]) + node.value.end_col_offset
    names = ast.literal_eval(node.value) + (name,)
    registry.write_text(text[:start] + "(" + ", ".join(map(repr, names)).replace("'", '"') + ")"
                        + text[end:], "utf-8")
    toc = root / "_toc.yml"
    lines = toc.read_text("utf-8").splitlines()
    last = max(i for i, line in enumerate(lines) if re.fullmatch(r"\s*- file: book/exercises/\w+\s*", line))
    indent = lines[last][:len(lines[last]) - len(lines[last].lstrip())]
    _insert_after(toc, last, f"{indent}- file: book/exercises/{name}")


def lay_out(name, root=CHECKOUT, title=None, lesson=None, practises=None):
    """Write exercise ``name``'s parts under ``root`` (a course checkout) and register it.

    ``title``: the exercise's TITLE (str); ``lesson``: the lesson page to read first (a
    name under book/lessons/, default the first in _toc.yml); ``practises``: the index
    table's "Practises" cell. Returns the paths written or changed (list of Path). Raises
    :class:`Refused` (nothing written) when a part exists, the name is registered or not
    a name, or the lesson is not there."""
    root = Path(root)
    lesson = lesson or _first_lesson(root)
    said = _refusals(name, root, lesson)
    if said:
        raise Refused("; ".join(said))
    fill = {"name": name, "label": name.replace("_", "-"), "lesson": lesson,
            "title": (title or f"TODO: the title of {name}").replace('"', "'"),
            "practises": practises or "TODO: what it practises"}
    written = []
    for template, target in targets(name, root).items():
        if template is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(string.Template((TEMPLATE / template).read_text("utf-8")).substitute(fill),
                          "utf-8")
        written.append(target)
    tests = graded_tests(root / "autograder" / "exercises" / name / "hidden" / "tests.py")
    source = targets(name, root)[None]
    source.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook(name, fill, tests), source)
    index = root / "book" / "exercises" / "index.md"
    _insert_after(index, _last_row(index),
                  string.Template((TEMPLATE / "index_row.md.tmpl").read_text("utf-8")).substitute(fill))
    register(name, root)
    return [*written, source, index, root / "_toc.yml", root / "autograder" / "exercises" / "__init__.py"]


def write_graded_cells(name, root=CHECKOUT):
    """Replace the graded cells of ``name``'s source notebook by one per hidden test
    (:func:`graded_cell`), in the tests' order, after the notebook's other cells.
    Returns the notebook's path; raises FileNotFoundError when a part is missing."""
    root = Path(root)
    source = targets(name, root)[None]
    nb = nbformat.read(source, as_version=4)
    tests = graded_tests(root / "autograder" / "exercises" / name / "hidden" / "tests.py")
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
    nb.cells += [graded_cell(name, *test) for test in tests]
    nbformat.write(nb, source)
    return source


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m autograder.new_exercise", description=__doc__.split("\n\n")[0])
    p.add_argument("name", help="the exercise's name: its folder, notebook, page and function")
    p.add_argument("--title", help="its TITLE (default: a TODO to replace)")
    p.add_argument("--lesson", help="the lesson to read first, a name under book/lessons/ "
                                    "(default: the first lesson in _toc.yml)")
    p.add_argument("--practises", help="the index table's 'Practises' cell (default: a TODO)")
    p.add_argument("--cells", action="store_true",
                   help="only write the source notebook's graded cells again from the hidden tests")
    p.add_argument("--root", help="the course checkout to write into (default: this one)")
    args = p.parse_args(argv)
    args.root = Path(args.root) if args.root else CHECKOUT
    try:
        if args.cells:
            print(f"wrote {write_graded_cells(args.name, args.root).relative_to(args.root)}")
            return 0
        paths = lay_out(args.name, args.root, args.title, args.lesson, args.practises)
    except (Refused, FileNotFoundError) as exc:
        print(f"new_exercise: nothing written: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path.relative_to(args.root)}")
    print("next: .venv/bin/python -m pytest tests/grading/test_exercise_folders.py; "
          "then replace the placeholder task (docs/exercises.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
