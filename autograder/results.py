"""Step 4 of grading: typed results, and Gradescope's format made only at the edge.

The grading run (:func:`autograder.pipeline.judged`) makes the judge's verdict
(:mod:`autograder.judge`) a :class:`GradingResult`: one :class:`CheckResult` per
hidden test, each carrying the nbgrader ``grade_id`` of the graded cell it scores
(the hidden test's function name, ``tests/grading/test_release.py``), so the
gradebook mirror writes grades by id. :meth:`GradingResult.to_gradescope` is the one conversion to Gradescope's
results.json (``score``, ``max_score``, ``output``, ``execution_time``,
``tests`` with ``name``/``score``/``max_score``/``status``/``output``/
``visibility``; ``extra_data`` holds the grading status and the digest of what
was graded, so a rerun can skip it): the command line's results.json,
Gradescope's ``run_autograder`` and the grading service's replies all come
from it. The service stores :meth:`GradingResult.to_record`. The model is
Otter-Grader's ``GradingResults``, converted to Gradescope's format only when
written out.

Every write is atomic (a temporary file renamed into place), and
``summary.csv`` is always rebuilt from the results on disk. Statuses are
:class:`Status` and :class:`CheckStatus`, string enums: each is its word wherever
it is written (JSON, CSV, the service's store), so the files are as before.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from autograder import exercises

JSON = dict[str, Any]  # a JSON object as :mod:`json` reads and writes it

SUMMARY_FIELDS = ("submission", "exercise", "score", "max_score", "status", "output")
LEARNER_OUTPUT_CHARS = 2000  # of the learner's printed output kept for the instructor


class CheckStatus(StrEnum):
    """One hidden test's verdict (Gradescope's ``status`` of a test)."""

    PASSED = "passed"
    FAILED = "failed"


class Status(StrEnum):
    """Why a submission's checks ran or did not: :attr:`GRADED`, or what stopped them."""

    GRADED = "graded"  # the hidden tests judged what the learner's code did
    UNREADABLE = "unreadable"  # nothing to run: the file could not be read as a hand-in
    WRONG_EXERCISE = "wrong exercise"  # the notebook of another exercise
    NOT_ATTEMPTED = "not attempted"  # the answer cell is still the released stub
    INCOMPLETE = "incomplete"  # the function is missing, or the probe could not run
    # how the learner's process ended, when not well (autograder.sandbox.wire.Outcome)
    TIMEOUT = "timeout"
    MEMORY = "memory"
    EXITED = "exited"
    CRASHED = "crashed"
    ERROR = "error"  # the grader's own fault: the learner is told to tell the instructor


def _known(kind: type[StrEnum], word: str) -> str:
    """``word`` as a member of ``kind``; a word of none (a stored result's, written by
    another version or by hand) is kept as it is, so reading a store never fails on it."""
    try:
        return kind(word)
    except ValueError:
        return word


@dataclass(frozen=True)
class CheckResult:
    """One hidden test's verdict on one submission.

    ``grade_id`` is the nbgrader grade_id of the graded cell (the hidden
    test's function name); ``title`` the name learners read; ``score`` and
    ``max_score`` are points; ``status`` is ``passed`` or ``failed``;
    ``output`` the feedback a learner reads (plain words, never test source).
    """

    grade_id: str | None  # None: a title no hidden test has now (a result stored before ids)
    title: str
    score: float
    max_score: float
    status: CheckStatus | str  # a stored word of no CheckStatus stays a str
    output: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", _known(CheckStatus, self.status))

    def to_gradescope(self, visibility: str = "visible") -> JSON:
        """This check as one entry of Gradescope's ``tests`` list."""
        return {"name": self.title, "score": self.score, "max_score": self.max_score,
                "status": self.status, "output": self.output, "visibility": visibility}


@dataclass(frozen=True)
class GradingResult:
    """The result of grading one submission.

    ``checks`` are :class:`CheckResult` in the hidden tests' order;
    ``output`` says what happened in plain words; ``status`` (a :class:`Status`; its
    word is taken too, and a stored word of none is kept) is ``graded``
    or why the checks did not run (``unreadable``, ``wrong exercise``,
    ``not attempted``, ``incomplete``, a sandbox outcome such as
    ``timeout`` or ``memory``, ``error`` for a grader fault); ``digest`` is
    the hex identity of what was graded (:func:`autograder.pipeline.digest`);
    ``seconds`` the wall time of grading; ``learner_output`` the end of what
    the learner's code printed (at most :data:`LEARNER_OUTPUT_CHARS`);
    ``exercise`` the exercise graded ("" in a result stored before it was kept);
    ``fault`` the traceback of a grader fault ("" otherwise), for instructors only:
    :meth:`to_gradescope` (what learners read) never holds it; ``version`` the version
    of the exercise's grading that judged it (:mod:`autograder.exercises.current`;
    "" when unknown: stored before versions were kept, or a grader fault). The points
    it was graded out of are its checks' ``max_score`` by ``grade_id``
    (:meth:`points`).
    """

    checks: tuple[CheckResult, ...]
    output: str
    status: Status | str  # a stored word of no Status stays a str
    digest: str = ""
    seconds: float = 0.0
    learner_output: str = ""
    exercise: str = ""
    fault: str = ""
    version: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))
        object.__setattr__(self, "status", _known(Status, self.status))
        object.__setattr__(self, "learner_output", self.learner_output[-LEARNER_OUTPUT_CHARS:])

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.checks)

    def points(self) -> dict[str | None, float]:
        """The points table that graded this result: ``{grade_id: max_score}``."""
        return {c.grade_id: c.max_score for c in self.checks}

    def to_gradescope(self, visibility: str = "visible") -> JSON:
        """Gradescope's results.json for this submission, as a dict (the one conversion).

        ``visibility`` is each test's Gradescope visibility.
        """
        extra: dict[str, str] = {"status": self.status, "digest": self.digest,
                 "learner_output": self.learner_output, "exercise": self.exercise}
        if self.version:  # the hidden tests that graded it (unknown: left out)
            extra["version"] = self.version
        return {
            "score": self.score,
            "max_score": self.max_score,
            "output": self.output,
            "execution_time": round(self.seconds, 3),
            "tests": [c.to_gradescope(visibility) for c in self.checks],
            "extra_data": extra,
        }

    def to_record(self) -> JSON:
        """A JSON-ready dict holding every field (what the grading service stores);
        ``fault`` and ``version`` only when there is one."""
        record = dataclasses.asdict(self)
        for name in ("fault", "version"):  # kept only when known
            if not record[name]:
                del record[name]
        return record

    def for_instructor(self, visibility: str = "visible") -> JSON:
        """:meth:`to_gradescope` plus, after a grader fault, its traceback in
        ``extra_data["fault"]`` (the command line's results folder is the instructor's)."""
        data = self.to_gradescope(visibility)
        if self.fault:
            data["extra_data"]["fault"] = self.fault
        return data

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> GradingResult:
        """The result :meth:`to_record` gave; raises KeyError/TypeError on another shape."""
        fields = {k: v for k, v in data.items() if k != "checks"}
        return cls(checks=tuple(CheckResult(**c) for c in data["checks"]), **fields)

    @classmethod
    def from_gradescope(cls, data: Mapping[str, Any], grade_ids: Mapping[str, str | None]) -> GradingResult:
        """A result from Gradescope's dict (as stored before results were typed).

        ``grade_ids`` maps each test's title to its grade_id (None when unknown).
        """
        extra = data.get("extra_data") or {}
        checks = tuple(CheckResult(grade_ids.get(t["name"]), t["name"], t["score"], t["max_score"],
                                   t["status"], t["output"]) for t in data["tests"])
        return cls(checks, data["output"], extra.get("status", "graded"), extra.get("digest", ""),
                   data.get("execution_time", 0.0), extra.get("learner_output", ""),
                   extra.get("exercise", ""), version=extra.get("version", ""))


def stored(data: Mapping[str, Any], exercise: str) -> GradingResult:
    """A result as the grading service stored it (:meth:`GradingResult.to_record`), as a
    :class:`GradingResult`; one stored before results were typed (Gradescope's dict)
    gets each check's grade_id from its title in ``exercise``'s hidden tests."""
    if "checks" in data:
        return GradingResult.from_record(data)
    ids = {title: name for name, title, _ in exercises.get(exercise).tests()}
    return GradingResult.from_gradescope(data, ids)


def kept(out_dir: str | os.PathLike[str], name: str | os.PathLike[str], hex_digest: str) -> JSON | None:
    """The results.json dict already in ``out_dir`` for this very submission
    (same ``hex_digest``), else None: what a rerun keeps instead of regrading."""
    done = read_results(out_dir, name)
    if done and (done.get("extra_data") or {}).get("digest") == hex_digest:
        return done
    return None


def atomic_write(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(out_dir: str | os.PathLike[str], name: str, result: GradingResult) -> Path:
    """Write ``out_dir/<name>/results.json`` from a :class:`GradingResult`; its path."""
    path = Path(out_dir) / name / "results.json"
    atomic_write(path, json.dumps(result.for_instructor(), indent=2) + "\n")
    return path


def read_results(out_dir: str | os.PathLike[str], name: str | os.PathLike[str]) -> JSON | None:
    """The results on disk for ``name``, or None if missing or unreadable."""
    try:
        data: JSON = json.loads((Path(out_dir) / name / "results.json").read_text("utf-8"))
        return data
    except (OSError, ValueError):
        return None


def write_summary(out_dir: str | os.PathLike[str]) -> None:
    """Rebuild ``summary.csv`` from every results.json under ``out_dir``: a file's
    ``<name>/results.json`` and an nbgrader tree's ``<student>/<exercise>/results.json``,
    one row each (``submission`` is the name or the student)."""
    out_dir = Path(out_dir)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(SUMMARY_FIELDS)
    for path in sorted([*out_dir.glob("*/results.json"), *out_dir.glob("*/*/results.json")]):
        name = path.parent.relative_to(out_dir)
        data = read_results(out_dir, name)
        if data is None:
            continue
        extra = data["extra_data"]
        # a result written before results kept their exercise: a tree's folder names it
        exercise = extra.get("exercise") or (name.name if len(name.parts) > 1 else "")
        writer.writerow([name.parts[0], exercise, data["score"], data["max_score"],
                         extra["status"], data["output"].splitlines()[0]])
    atomic_write(out_dir / "summary.csv", buf.getvalue())
