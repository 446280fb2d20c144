"""The course is installed into .venv from this checkout (pyproject.toml, ``make venv``),
and its code imports by name: nothing puts folders on the import path, loads a module
from its file, or works the checkout out from its own ``__file__`` but
autograder/defaults.py (``CHECKOUT``).

Fast: one interpreter started, files read."""
import importlib.metadata
import re
import subprocess
import sys

import pytest

from autograder.defaults import CHECKOUT
from tests.course import REPO

# What pyproject.toml says the checkout's code imports by name.
PACKAGES = ("autograder", "scripts", "deploy.hub", "book._ext", "benchmarks", "tests")
CODE_SUFFIXES = {".py", ".sh", ".yml", ".yaml", ".toml", ".cfg", ".ini"}
CODE_NAMES = {"Makefile", "run"}  # .ci/run
THIS = "tests/test_packaging.py"  # names the patterns below

# Edits of an interpreter's import path, and loading one of our modules from its file.
PATH_EDITS = {
    "sys.path edited": re.compile(r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend|remove|pop|clear)\s*\(|"
                                  r"\[[^\]\n]*\]\s*=|\+?=(?!=))"),
    "site.addsitedir": re.compile(r"\baddsitedir\s*\("),
    "a module loaded from its file": re.compile(r"\bspec_from_file_location\s*\("),
    "PYTHONPATH set": re.compile(r"""(?:["']PYTHONPATH["']\s*(?::|\]\s*=(?!=))|\bPYTHONPATH\s*=(?!=))"""),
}
# Where one stays, and why.
ALLOWED = {
    # the zygote's own sys.path: confine.import_paths(), the folders learner code may import
    ("autograder/sandbox/__init__.py", "sys.path edited"),
    # a fresh copy of the lessons' helper per test (the lessons import it from their own folder)
    ("tests/book/test_course_rules.py", "a module loaded from its file"),
    # the drift run's stand-in for a kernel, run by its path where the course is not
    # installed (an accelerator machine): a page imports its helper from its own folder
    ("scripts/drift_cells.py", "sys.path edited"),
    ("scripts/drift_cells.py", "a module loaded from its file"),
    # learners' servers under make hub: the repository is hidden there, so the submit
    # module is a copy in their home (and the test that runs a kernel as theirs does)
    ("deploy/hub/jupyterhub_config.py", "PYTHONPATH set"),
    ("tests/test_defaults.py", "PYTHONPATH set"),
    # a copy of the checkout sharing this checkout's .venv (whose editable install names
    # this checkout): the copy's packages first, as its own make venv would have them
    ("tests/course.py", "PYTHONPATH set"),
}
# A folder above a module's own, worked out from its __file__ (or from a name made from it).
CLIMBS = re.compile(r"__file__\)?(?:\.resolve\(\))?(?:\.parent\.parent|\.parents\[[1-9]\])"
                    r"|\b[A-Z_]+\.(?:parent\.parent|parents\[[1-9]\])")
CLIMB_ALLOWED = {
    "autograder/defaults.py",  # CHECKOUT: the one place
    "scripts/drift_cells.py",  # run by its path where the course is not installed
    # learner code that hunts for the checkout, which the sandbox must defeat
    "tests/grading/hostile/reads_git_and_network.py", "tests/grading/hostile/reads_hidden_tests.py",
    "tests/grading/test_gradescope.py",
}


def code_files():
    """``(path, text)`` of every file of the checkout that is code (tracked or new)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, check=True, capture_output=True, text=True).stdout.splitlines()
    for name in listed:
        path = REPO / name
        if name != THIS and path.is_file() and (path.suffix in CODE_SUFFIXES or path.name in CODE_NAMES):
            yield name, path.read_text(errors="replace")


def path_edits(text):
    """The kinds of :data:`PATH_EDITS` found in ``text``."""
    return sorted(kind for kind, pattern in PATH_EDITS.items() if pattern.search(text))


def test_the_checks_see_what_they_look_for():
    """The scans below find each pattern (so their green means something)."""
    found = [path_edits(t) for t in (
        "sys.path.insert(0, str(REPO))", "sys.path[:0] = paths", "sys.path += [x]",
        "site.addsitedir(here)", "spec = importlib.util.spec_from_file_location('m', p)",
        'env["PYTHONPATH"] = str(REPO)', "dict(os.environ, PYTHONPATH=str(REPO))",
        '{"PYTHONPATH": lib}', "PYTHONPATH=. python -m x")]
    assert all(len(kinds) == 1 for kinds in found), found
    assert path_edits('env.pop("PYTHONPATH", None); k != "PYTHONPATH"; sys.path == p; '
                      'print(sys.path); if k not in ("PYTHONPATH", "HOST")') == []
    assert CLIMBS.search("REPO = Path(__file__).resolve().parents[2]")
    assert CLIMBS.search("REPO = HERE.parents[1]") and CLIMBS.search("FOLDER.parent.parent")
    assert not CLIMBS.search("HERE = Path(__file__).resolve().parent")
    assert not CLIMBS.search("exercise = expected.parents[2].name")


def test_no_code_edits_the_import_path():
    """The course is installed: code imports what it needs by name. The exceptions
    (:data:`ALLOWED`) are where an interpreter must see less than .venv's."""
    found = {(name, kind) for name, text in code_files() for kind in path_edits(text)}
    extra, gone = sorted(found - ALLOWED), sorted(ALLOWED - found)
    assert not extra, f"these edit an import path or load a module from its file: {extra}"
    assert not gone, f"no longer there (drop them from ALLOWED): {gone}"


def test_the_checkout_is_known_in_one_place():
    """autograder/defaults.py's CHECKOUT says where the checkout is; everything else
    imports it (a module that climbed from its own file would break where it is copied)."""
    climbing = sorted(name for name, text in code_files()
                      if name.endswith(".py") and CLIMBS.search(text) and name not in CLIMB_ALLOWED)
    assert not climbing, f"these work the checkout out from their own __file__: {climbing}"
    assert CHECKOUT == REPO and (CHECKOUT / "pyproject.toml").is_file()


def test_venv_imports_the_course_from_this_checkout(tmp_path):
    """Any of .venv's interpreters, started anywhere with no PYTHONPATH (nbgrader's
    kernels, JupyterHub's services, the grader's zygote, which runs isolated: ``-I``),
    imports the course's packages from this checkout."""
    code = ("import importlib, sys; print('\\n'.join(importlib.import_module(n).__file__ "
            "for n in sys.argv[1:]))")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-I", "-c", code, *PACKAGES], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    assert files == [str(REPO / n.replace(".", "/") / "__init__.py") for n in PACKAGES]


def test_the_install_is_a_plain_path_entry():
    """The editable install is one ``.pth`` line naming the checkout: no import hook, so
    the sandbox's zygote imports by the folders it is given (confine.import_paths) and
    learner code sees only what is bound back into its namespace."""
    try:
        dist = importlib.metadata.distribution("jax-donation-course")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("the course is not installed in this interpreter: make venv")
    installed = [f for f in dist.files if ".dist-info/" not in f.as_posix()]
    assert [f.suffix for f in installed] == [".pth"], installed
    assert installed[0].locate().read_text().split() == [str(REPO)]


def test_make_venv_leaves_out_what_defaults_says_it_removes():
    """``NOT_KEPT`` (autograder/defaults.py says why: seconds of CPU in every nbgrader
    command, grader and server) is pinned for pip's resolution and not installed in .venv,
    and jsonschema, which would import it, is imported without it."""
    from packaging.utils import canonicalize_name

    from autograder.defaults import NOT_KEPT

    pinned = {canonicalize_name(line.split("==")[0]) for line in
              (REPO / "requirements.txt").read_text().splitlines() if "==" in line}
    for name in NOT_KEPT:
        assert canonicalize_name(name) in pinned, name
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.distribution(name)
    done = subprocess.run([sys.executable, "-c", "import sys, jsonschema; print(sorted(sys.modules))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "'jsonschema'" in done.stdout, done.stderr
    assert not any(f"'{name.replace('-', '_')}'" in done.stdout for name in NOT_KEPT)
