"""The exercises the grader knows: one folder each, registered in :data:`NAMES`.

``autograder/exercises/<name>/`` holds everything the grader has of one exercise:

- ``__init__.py``, its metadata: ``TITLE`` (str), ``POINTS`` (int, the sum of
  the hidden tests' points) and ``PRELOAD`` (names of modules the zygote
  imports once before forking learner processes, for heavy imports the
  exercise's learners use). Plain Python constants: Python imports this file
  anyway on its way to the probe, so the metadata goes wherever the probe goes
  (the learner's process, a Gradescope zip) with no parser and no file to
  pack by hand.
- ``probe.py``: ``observe(ns, seed)``, run in the learner's process after the
  learner's code (see :mod:`autograder.exercises.common`).
- ``hidden/``: never readable by learner code (root-only on disk, covered by an
  empty mount in the learner's process; :func:`private_folders`).
  ``hidden/tests.py`` holds the hidden tests, ``hidden/samples/`` sample
  answer cells with their expected grades (``expected.json``).

Two parts live where their tools want them: the nbgrader source notebook
(:attr:`Exercise.source`) and the book page (:attr:`Exercise.page`).
``tests/grading/test_exercise_folders.py`` fails, naming the part, when any
part of a registered exercise is missing.
"""
from __future__ import annotations

import ast
import functools
import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from autograder.defaults import CHECKOUT as REPO

FOLDER = Path(__file__).resolve().parent
# The registration: the order is the course's (the first is the default
# exercise of a file that names none).
NAMES = ("update_with_donate", "donation_report", "fix_training_loop", "silent_donation")


@dataclass(frozen=True)
class Exercise:
    """One registered exercise: its metadata and where its parts are."""

    name: str
    title: str
    points: int
    preload: tuple[str, ...]
    folder: Path

    def probe(self) -> ModuleType:
        """The probe module (imported; it imports JAX only when observing)."""
        return importlib.import_module(f"{__name__}.{self.name}.probe")

    def hidden(self) -> ModuleType:
        """The hidden tests' module as they are on disk now (grader side only: imported
        again when they changed, :func:`autograder.exercises.current.version`; raises
        its ``NotLoadable`` while they cannot be imported)."""
        from autograder.exercises import current
        current.version(self.name)
        return importlib.import_module(f"{__name__}.{self.name}.hidden.tests")

    def version(self) -> str:
        """The version of this exercise's grading on disk (hex digest; see
        :mod:`autograder.exercises.current`)."""
        from autograder.exercises import current
        return current.version(self.name)

    def tests(self) -> list[tuple[str, str, int]]:
        """``[(function name, title, points)]`` of the hidden tests, in file order."""
        return [(name, fn.title, fn.points) for name, fn in vars(self.hidden()).items()
                if name.startswith("test_") and hasattr(fn, "points")]

    @property
    def samples(self) -> Path:
        """Folder of sample answer cells (``<sample>.py``) and ``expected.json``."""
        return self.folder / "hidden" / "samples"

    @property
    def source(self) -> Path:
        """The nbgrader source notebook (instructor's version)."""
        return REPO / "exercises" / "source" / self.name / f"{self.name}.ipynb"

    @property
    def page(self) -> Path:
        """The exercise's page in the book."""
        return REPO / "book" / "exercises" / f"{self.name}.md"


_registered: dict[str, Any] = {"stat": None, "names": NAMES}  # NAMES as this file said it when last read


def names() -> tuple[str, ...]:
    """The registered exercises' names (a tuple of str), in the course's order.

    :data:`NAMES` as this file says it now: read again when the file changes, so a
    running grading service (and every process it forks) knows an exercise
    registered after it started. A file that cannot be read mid-edit keeps the
    list it last had.
    """
    here = Path(__file__)
    try:
        stat = here.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if key != _registered["stat"]:
            _registered.update(stat=key, names=_read_names(here.read_text("utf-8")))
    except (OSError, SyntaxError, ValueError) as exc:
        logging.getLogger(__name__).warning("kept the exercise list %s: %s",
                                            _registered["names"], exc)
    return _registered["names"]


def _read_names(text: str) -> tuple[str, ...]:
    """The tuple ``NAMES = (...)`` assigns in ``text`` (this module's source)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["NAMES"]:
            value = ast.literal_eval(node.value)
            if isinstance(value, tuple) and all(isinstance(n, str) for n in value):
                return value
    raise ValueError("no NAMES tuple of names")


def get(name: str) -> Exercise:
    """The :class:`Exercise` called ``name``; ValueError when none is registered. Its
    metadata is read again after :mod:`autograder.exercises.current` loaded the
    exercise's modules again (an instructor's edit)."""
    if name not in names():
        raise ValueError(f"unknown exercise {name!r}; one of {', '.join(names())}")
    from autograder.exercises import current
    return _made(name, current.generation)


@functools.lru_cache(maxsize=None)
def _made(name: str, generation: int) -> Exercise:
    meta = importlib.import_module(f"{__name__}.{name}")
    return Exercise(name=name, title=meta.TITLE, points=meta.POINTS,
                    preload=tuple(meta.PRELOAD), folder=FOLDER / name)


def private_folders() -> list[Path]:
    """Every exercise folder's ``hidden/`` (registered or not: a forgotten
    registration must not expose its hidden tests), as absolute paths."""
    return sorted(FOLDER.glob("*/hidden"))
