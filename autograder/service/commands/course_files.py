"""The course's own files: what decides each exercise's checks and points, which a
backup holds with their digests so that a restore gives back the same course.

Two places hold them:

- ``grader/``: the checkout's ``autograder/exercises/`` (the registry ``__init__.py``,
  the probes' helpers ``common.py``, and each exercise's folder: metadata, probe,
  ``hidden/`` tests and samples);
- ``course/``: the nbgrader course folder (``GRADER_COURSE``): ``nbgrader_config.py``
  (the late policy) and ``source/`` (the source notebooks).

A listing is ``{key: {"sha256": hex str, "mode": int}}``, keyed ``<place>/<path>``
with ``/`` separators. What a build or a run makes (``__pycache__``, notebook
checkpoints) is not the course's.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from autograder.exercises import FOLDER as GRADER

NOT_COURSE = ("__pycache__", ".ipynb_checkpoints")


def places(course) -> dict[str, Path]:
    """``{place: folder}`` of the course files, for the course folder ``course``."""
    return {"grader": GRADER, "course": Path(course)}


def _walk(folder: Path):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and \
                not any(part in NOT_COURSE for part in path.relative_to(folder).parts) and \
                path.suffix != ".pyc":
            yield path


def files(course) -> dict[str, Path]:
    """``{key: path}`` of every course file there is now (see the module)."""
    grader, course = GRADER, Path(course)
    found = [grader / "__init__.py", grader / "common.py",
             *(p for d in sorted(grader.iterdir()) if (d / "__init__.py").is_file()
               for p in _walk(d)),
             course / "nbgrader_config.py",
             *(_walk(course / "source") if (course / "source").is_dir() else ())]
    keys = {}
    for path in found:
        if path.is_file():
            place = "grader" if path.is_relative_to(grader) else "course"
            base = grader if place == "grader" else course
            keys[f"{place}/{path.relative_to(base).as_posix()}"] = path
    return keys


def digest(path) -> str:
    """SHA-256 of the file's bytes, as hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def listing(course) -> dict[str, dict]:
    """The listing (see the module) of the course files in the checkout now."""
    return {key: {"sha256": digest(path), "mode": path.stat().st_mode & 0o777}
            for key, path in files(course).items()}


def where(key: str, course) -> Path:
    """The path in this checkout of the course file ``key``; ValueError for a key that
    would leave its place (a backup is data, not instructions)."""
    place, _, rest = key.partition("/")
    base = places(course).get(place)
    target = (base / rest).resolve() if base and rest else None
    if base is None or target is None or not target.is_relative_to(base.resolve()):
        raise ValueError(f"{key!r} is not a course file's name")
    return target


def differing(saved: dict, course) -> tuple[list[str], list[str]]:
    """``(changed, extra)``: the keys of ``saved`` (a listing) whose file in the checkout
    is missing or has other bytes, and the checkout's course files ``saved`` lacks."""
    now = files(course)
    changed = [k for k, v in saved.items()
               if k not in now or digest(now[k]) != v["sha256"]]
    return changed, sorted(set(now) - set(saved))


def put_back(key: str, src: Path, mode: int, course) -> None:
    """Write the backup's copy ``src`` of ``key`` into the checkout, whole (a temporary
    file renamed into place, with the recorded ``mode``), never followed through a link.
    The file gets a new modification time: ``make release`` then sees a newer source."""
    target = where(key, course)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(src.read_bytes())
        os.chmod(tmp, mode & 0o777)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
