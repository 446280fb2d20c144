"""The layout tables match the tree: every path the README's one-screen table and
docs/layout.md's full one name exists, every top-level folder of the repository is
in the README's, and every module under autograder/ is named in docs/layout.md, so
"where does X live?" has an answer a reader can trust; and
conftest files hold only pytest hooks and fixtures, what tests share besides living in
modules named for what they hold, which nothing imports from a conftest."""
from __future__ import annotations

import ast
import glob
import re
import subprocess

import pytest

from tests.course import REPO

# files at the root that explain themselves (configuration of tools, lock files)
SELF_EXPLAINING = {".gitignore", "package.json", "package-lock.json", "pytest.ini",
                   "requirements.txt", "pyproject.toml", "README.md", "Makefile", "__init__.py"}
# the README's table is the layout in one screen; docs/layout.md names every module
LAYOUTS = ["README.md", "docs/layout.md"]


def layout_rows(doc="README.md"):
    """The rows of ``doc``'s layout table (the lines that start ``| `path` ``)."""
    text = (REPO / doc).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.startswith("| `")]


def expand(path):
    """``path`` with each ``<placeholder>`` standing for every folder there (globbed);
    kept as written when nothing matches, so the existence test names it."""
    pattern = re.sub(r"<[^>]+>", "*", path)
    matches = sorted(glob.glob(pattern, root_dir=REPO)) if pattern != path else []
    return [m.rstrip("/") for m in matches] or [path.rstrip("/")]


def named_paths(doc="README.md"):
    """Each backticked path in ``doc``'s table, resolved against its row's own
    first-column folder (``pipeline.py`` in the ``autograder/`` row is
    ``autograder/pipeline.py``; in a ``<exercise>/`` row, the same file in every
    exercise's folder)."""
    found = set()
    for row in layout_rows(doc):
        first, rest = row.split(" | ", 1)
        heads = re.findall(r"`([^`]+)`", first)
        for head in heads:
            found.update(expand(head))
        base = next((h for h in heads if h.endswith("/")), "")
        for name in re.findall(r"`([\w./<>-]+)`", rest):
            if "/" in name or "." in name:
                found.update(expand(name if (REPO / name).exists() else base + name))
    return found


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("doc", LAYOUTS)
def test_every_path_the_layout_names_exists(doc):
    assert layout_rows(doc), f"{doc} has no layout table"
    missing = sorted(p for p in named_paths(doc) if not (REPO / p).exists())
    assert not missing, f"{doc}'s layout names paths that do not exist: {missing}"


def test_every_top_level_folder_is_in_the_readmes_layout():
    """The one screen is complete at the top: a new folder gets its row."""
    named = named_paths()
    wanted = {f.split("/")[0] for f in tracked() if "/" in f or f not in SELF_EXPLAINING}
    absent = sorted(w for w in wanted if not any(n == w or n.startswith(w + "/") for n in named))
    assert not absent, f"README's layout table does not say where these live: {absent}"


# folders of many files of one kind, named as a folder: sample hand-ins, migrations
OF_ONE_KIND = ("/hidden/samples/", "/migrations/versions/")


def unnamed_modules(named, modules):
    """The ``modules`` (paths of .py files) that ``named`` (paths a layout names) does
    not: a module is named by its path, a package's ``__init__.py`` also by its folder,
    a file of a folder :data:`OF_ONE_KIND` by that folder."""
    def is_named(module):
        folder = module.rsplit("/", 1)[0]
        return (module in named
                or module.endswith("/__init__.py") and folder in named
                or any(kind in module and module.split(kind)[0] + kind.rstrip("/") in named
                       for kind in OF_ONE_KIND))
    return sorted(m for m in modules if not is_named(m))


def test_docs_layout_names_every_module_under_autograder():
    """A module added to the grader or the service gets its words in docs/layout.md."""
    modules = [f for f in tracked() if f.startswith("autograder/") and f.endswith(".py")]
    missing = unnamed_modules(named_paths("docs/layout.md"), modules)
    assert not missing, f"docs/layout.md does not say where these live or what they do: {missing}"


def test_the_layout_check_sees_an_unnamed_module():
    """The check above finds what it looks for (so its green means something)."""
    named = {"a/b.py", "a/pkg", "a/ex/hidden/samples"}
    assert unnamed_modules(named, ["a/b.py", "a/c.py", "a/pkg/__init__.py", "a/pkg/d.py",
                                   "a/ex/hidden/samples/x.py", "a/other/__init__.py"]) == [
        "a/c.py", "a/other/__init__.py", "a/pkg/d.py"]


def _is_fixture(decorator):
    """``@pytest.fixture``, ``@pytest.fixture(...)``, ``@fixture`` or ``@fixture(...)``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture"
            or isinstance(target, ast.Name) and target.id == "fixture")


def not_fixtures(source):
    """The top-level definitions in a conftest's ``source`` that are neither a fixture nor
    a pytest hook (``pytest_*``): every class, and every other function."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            found.append(f"class {node.name}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                node.name.startswith("pytest_") or any(map(_is_fixture, node.decorator_list))):
            found.append(f"def {node.name}")
    return found


def conftest_imports(source):
    """The import statements in ``source`` that import from a conftest module
    (``from tests.service.conftest import ...``, ``from .conftest import ...``,
    ``from tests import conftest``, ``import tests.conftest``); none in a file that is
    not Python (sample hand-ins with a syntax error on purpose)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module.split(".")[-1] == "conftest" or any(a.name == "conftest" for a in node.names):
                found.append(f"from {module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if "conftest" in a.name.split(".")]
    return found


def test_conftest_files_hold_only_hooks_and_fixtures():
    """A helper in a conftest is a library nobody can find by its name, and importing it
    loads the conftest a second time as an ordinary module: helpers live in a module
    named for what it holds (tests/course.py, tests/service/running.py, ...)."""
    held = {path: not_fixtures((REPO / path).read_text(encoding="utf-8"))
            for path in tracked() if path.endswith("conftest.py")}
    assert any(p.startswith("tests/") for p in held), "found no conftest under tests/"
    held = {p: found for p, found in held.items() if found}
    assert not held, f"conftest files define what is neither a fixture nor a pytest hook: {held}"


def test_nothing_imports_from_a_conftest():
    """Tests, benchmarks and scripts import helpers from their modules, never from a
    conftest (tests/tiers.py names fixtures by their conftest's module, but imports none)."""
    imports = {path: conftest_imports((REPO / path).read_text(encoding="utf-8"))
               for path in tracked() if path.endswith(".py")}
    imports = {p: found for p, found in imports.items() if found}
    assert not imports, f"these import from a conftest module: {imports}"


def test_the_checks_see_helpers_and_imports():
    """The two checks above find what they look for (so their green means something)."""
    assert not_fixtures("import pytest\n\n@pytest.fixture(scope='session')\ndef a(): pass\n\n"
                        "@pytest.fixture\ndef b(): pass\n\ndef pytest_addoption(parser): pass\n"
                        "X = 1\n") == []
    assert not_fixtures("def free_port(): pass\nclass Service: pass\n") == \
        ["def free_port", "class Service"]
    assert conftest_imports("from tests.service.conftest import http\nfrom .conftest import x\n"
                            "from tests import conftest\nimport tests.conftest\n"
                            "from tests.course import REPO\nimport conftest_like\n") == [
        "from tests.service.conftest import http", "from .conftest import x",
        "from tests import conftest", "import tests.conftest"]
