"""The checkout and the course's commands as the README runs them: the repository's
and the venv's paths, the README's environment, nbgrader from ``exercises/``, the
release ``make release`` makes, the grader's command line, and a private copy of a
released course for a test that writes into it."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, release_argv

BIN = Path(sys.executable).parent


def nbgrader_env(checkout=REPO):
    """The environment of someone following the README in ``checkout``: the venv's tools
    on PATH (its ``PATH=../.venv/bin:$PATH``) and nothing else added. In particular no
    PYTHONPATH: the hidden cells import the course from .venv, where ``make venv``
    installed it, as they must for an instructor's ``cd exercises; nbgrader autograde``.

    A copy of the checkout (:func:`tests.grading.helpers.checkout`) shares this
    checkout's .venv, whose editable install names this checkout; there PYTHONPATH puts
    the copy's packages first, as the copy's own ``make venv`` would have."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    if Path(checkout).resolve() != REPO.resolve():
        env["PYTHONPATH"] = str(checkout)
    return env


def quiet(args):
    """``--log-level=ERROR`` unless ``args`` set a level (nbgrader refuses two)."""
    return [] if any(a.startswith("--log-level") for a in args) else ["--log-level=ERROR"]


def nbgrader(course, *args):
    """Run ``nbgrader ARGS`` as the README does, from ``exercises/`` (so its
    nbgrader_config.py is the one loaded), on the course files in ``course``
    (``--CourseDirectory.root``: tests never write into ``exercises/``).
    Returns the CompletedProcess; raises AssertionError with nbgrader's own words (the
    end of its stderr: which notebook, which traceback) when it fails."""
    done = subprocess.run([str(BIN / "nbgrader"), *args, f"--CourseDirectory.root={course}",
                           *quiet(args)], cwd=REPO / "exercises",
                          env=nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, (f"nbgrader {' '.join(map(str, args))} exited {done.returncode}:\n"
                                  f"{(done.stdout + done.stderr)[-4000:]}")
    return done


def release(course, assignment, *extra):
    """``make release``'s nbgrader command (:func:`autograder.defaults.release_argv`)
    for ``assignment`` in ``course``, through :func:`nbgrader`."""
    return nbgrader(course, *release_argv(assignment)[1:], *extra)


def release_every_exercise(course):
    """``course`` (an empty folder) with the course's nbgrader config and every exercise
    of ``exercises/source`` released into it (and its gradebook): ``course``."""
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)  # as in exercises/
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    # One nbgrader process for all of them (its assignment id is a glob over source/):
    # the same release as one command per exercise, one interpreter start instead of one per exercise.
    release(course, "*")
    return course


def grader_cli(*args, cwd=REPO, env=None, timeout=600, wait=True):
    """``python -m autograder ARGS`` as the README runs it: from the repository's root,
    in the README's environment (:func:`nbgrader_env`, plus ``env``). Returns the
    CompletedProcess (text output captured, not checked), or with ``wait=False`` the
    running Popen (stdout and stderr piped)."""
    argv = [sys.executable, "-m", "autograder", *map(str, args)]
    environment = dict(nbgrader_env(cwd), **(env or {}))
    if not wait:
        return subprocess.Popen(argv, cwd=cwd, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=timeout)


def copy_tracked(root, *paths):
    """The checkout's files as a clone has them (git's tracked files and the untracked ones
    it does not ignore; only under ``paths`` when given), copied into ``root``: ``root``."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                             *paths], cwd=REPO, check=True, capture_output=True, text=True).stdout
    for name in filter(None, listed.split("\n")):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    return root


def copy_course(course, target):
    """A private copy of ``course`` at ``target``, for a test that writes into it:
    the shared course stays as released, so every test passes alone and in any order."""
    shutil.copytree(course, target)
    return target
