"""The version of an exercise's grading that is on disk now, and its modules as they are.

An exercise is graded by its hidden tests (``hidden/tests.py``: what is checked and
for how many points), its probe (``probe.py``: what is observed), its metadata
(``__init__.py``) and the probes' helpers (``common.py``). :func:`version` is the
SHA-256 of those files' bytes: every result records it
(:attr:`autograder.results.GradingResult.version`), so a grade made by older hidden
tests is known as such. A long-running grader (the grading service, its workers)
calls :func:`version` before it grades: when the files changed, this process's
modules are loaded again from disk (the sandbox's zygote, which holds the probe,
is started again by :meth:`autograder.sandbox.Zygote.launch`), so a new submission
is never graded by the tests the process started with.

Grader side only: learner processes never read these files (they get the probe
from the zygote's fork).
"""
from __future__ import annotations

import hashlib
import importlib
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parent
_lock = threading.RLock()
generation = 0  # how many times modules were loaded again (autograder.exercises.get)
_seen: dict[str, tuple[object, str, str | None]] = {}  # exercise -> (the files' stat keys, digest, why it cannot be loaded or None)


class NotLoadable(Exception):
    """The exercise's grading files on disk cannot be read or imported (a syntax error
    mid-edit, a missing file): nothing of the exercise may be graded until they can."""


def files(name: str) -> list[Path]:
    """The files whose bytes are the version of exercise ``name``'s grading, in order."""
    folder = FOLDER / name
    return [FOLDER / "common.py", folder / "__init__.py", folder / "probe.py",
            folder / "hidden" / "tests.py"]


def _modules(name: str) -> list[str]:
    """The modules of :func:`files`, in the order they are loaded again."""
    return ["autograder.exercises.common", f"autograder.exercises.{name}",
            f"autograder.exercises.{name}.probe", f"autograder.exercises.{name}.hidden.tests"]


def _forget(module: ModuleType) -> None:
    """Remove the names ``module``'s code defined: ``importlib.reload`` runs the new code in
    the old namespace, so a hidden test deleted from the file would still be graded."""
    for key in [k for k in vars(module) if not k.startswith("__")]:
        delattr(module, key)


def _load(name: str) -> str | None:
    """Import (again) the modules of ``name``: None, or why they cannot be imported."""
    try:
        for module in _modules(name):
            if module in sys.modules:
                if module.endswith(".hidden.tests"):  # its names are the checks:
                    _forget(sys.modules[module])  # one removed must not stay
                importlib.reload(sys.modules[module])
            else:
                importlib.import_module(module)
    except Exception as exc:  # a syntax or import error in the instructor's edit
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return None


def version(name: str) -> str:
    """The version of exercise ``name``'s grading on disk: a 64-character hex digest.

    When the files changed since this process last asked, its modules are imported
    again first (so the hidden tests that judge next are the ones on disk). Raises
    :class:`NotLoadable`, with the reason in words, while they cannot be read or
    imported.
    """
    global generation
    with _lock:
        try:
            key = tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in map(Path.stat, files(name)))
        except OSError as exc:
            raise NotLoadable(f"the grading files of {name} cannot be read: {exc}") from None
        seen = _seen.get(name)
        if seen is None or seen[0] != key:
            digest = hashlib.sha256(b"".join(p.read_bytes() for p in files(name))).hexdigest()
            if seen is not None and seen[1] == digest and seen[2] is None:
                error = None  # touched, not changed
            else:
                error = _load(name)
                generation += 1  # the registry's metadata is read again
            seen = _seen[name] = (key, digest, error)
        if seen[2]:
            raise NotLoadable(f"the hidden tests of {name} cannot be loaded ({seen[2]}); "
                              "nothing of it is graded until they can")
        return seen[1]


def loadable(names: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """``({name: version}, {name: why not})`` of the exercises ``names``."""
    good, bad = {}, {}
    for name in names:
        try:
            good[name] = version(name)
        except NotLoadable as exc:
            bad[name] = str(exc)
    return good, bad
