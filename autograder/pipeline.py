"""One grading run for every front door: prepare -> load -> digest -> skip if
unchanged -> run -> judge -> (fault) -> report.

A front door gives :func:`grade_all` a *source*, where hand-ins come from, and a
*sink*, where results go:

- the command line (:mod:`autograder.__main__`): :class:`autograder.files.Files`
  (paths and an exercise, or an nbgrader tree) into
  :class:`autograder.files.ResultsFolder` (``<name>/results.json``, ``summary.csv``);
- the grading service's threads and workers (:mod:`autograder.service.grading`) have
  no batch: each claims one stored row and grades it with :func:`grade_one`, the unit
  :func:`grade_all` runs for every hand-in, in a process prepared once;
- Gradescope's ``run_autograder`` (:mod:`autograder.gradescope`): an upload,
  with its one-file rule, into ``results/results.json``.

A source (:class:`Source`) has ``exercises()`` (the exercises whose modules the zygote
imports before the hand-ins are read), ``submissions()`` (loaded
:class:`~autograder.load.Submission` objects: loading never runs learner
code), ``hide`` (folders the learner's process must not see) and ``private``
(a folder made unreadable to learner uids, or None). A sink (:class:`Sink`) has
``kept(sub, digest)`` (the result already there for this very submission, or
None), ``put(sub, result)`` (may raise OSError) and ``close()``. What a run tells
its caller as it goes is a :class:`Progress`. All three are protocols: a front door's
classes need not inherit from them.

A grader fault (any exception while grading) still gives the learner a result
(status ``error``, plain words) and keeps the traceback for the instructor in
:attr:`~autograder.results.GradingResult.fault`; the sink decides where an
instructor reads it. ``nbgrader autograde``'s kernels judge through
:func:`autograder.judge.check_result` (:mod:`autograder.nbgrader_bridge`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import queue
import time
import traceback
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Protocol

from autograder import judge, sandbox
from autograder.load import Submission
from autograder.results import GradingResult, Status
from autograder.sandbox import Limits, Outcome

# What decides a grade, under autograder/: the exercises' hidden tests, probes and
# requirement rows, the sandbox, the judge and what it reads and writes. The service,
# the class views, Gradescope's packaging and the command line are not: editing them
# neither changes a learner's random inputs nor regrades anyone.
GRADING_CODE = ("exercises", "sandbox", "judge.py", "feedback.py", "notebook.py",
                "pipeline.py", "results.py", "requirements.py")


def grading_files() -> list[Path]:
    """The ``.py`` files :func:`grader_digest` hashes (:data:`GRADING_CODE`, sample
    answers in the exercises' ``hidden/samples/`` left out), sorted paths."""
    root = Path(__file__).resolve().parent
    found = []
    for name in GRADING_CODE:
        path = root / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sorted(p for p in found if "samples" not in p.relative_to(root).parts)


@functools.lru_cache(maxsize=1)
def grader_digest() -> str:
    """Hash (hex) of the code that decides a grade (:func:`grading_files`): a changed test,
    probe or judge gives every submission new inputs and regrades it."""
    h, root = hashlib.sha256(), Path(__file__).resolve().parent
    for path in grading_files():
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def digest(sub: Submission, limits: Limits) -> str:
    """Identity of what is graded: file bytes, exercise, grader code, limits (hex). (The
    grader code's digest is taken once per process; which hidden tests judged a result is
    its ``version``, :func:`grading_version`, read at each grading.)"""
    h = hashlib.sha256()
    h.update(f"{sub.sha256 or '<unreadable>'}|{sub.exercise}|{grader_digest()}|{limits}".encode())
    return h.hexdigest()


def grading_version(exercise: str) -> str:
    """The version of ``exercise``'s grading on disk (:mod:`autograder.exercises.current`),
    "" when it cannot be loaded (its submissions then get a grader fault, which says why)."""
    from autograder.exercises import current
    try:
        return current.version(exercise)
    except (current.NotLoadable, ValueError):
        return ""


def seed_for(hex_digest: str) -> int:
    """Input seed for a submission: fixed by its digest, unknown before grading."""
    return int(hex_digest[:8], 16)


def hidden_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Folders holding submissions or results, minus any the grader itself needs."""
    needed = [Path(p) for p in sandbox.import_paths()]
    dirs = set()
    for path in map(Path, paths):
        path = path.resolve()
        folder = path if path.is_dir() else path.parent
        if not any(folder == n or folder in n.parents for n in needed):
            dirs.add(str(folder))
    return sorted(dirs)


def prepare(exercises: Iterable[str], private: str | os.PathLike[str] | None = None) -> None:
    """Hide grader-only files (and ``private``) from learner uids, and start the zygote
    importing ``exercises``' modules (none: started on first use), so that it imports
    JAX while the hand-ins are read."""
    sandbox.protect(private)
    if exercises:
        sandbox.shared().launch(sorted(exercises))


class Source(Protocol):
    """Where a run's hand-ins come from (see the module's docstring)."""

    hide: Sequence[str]  # folders the learner's process must not see
    private: str | os.PathLike[str] | None  # made unreadable to learner uids

    def exercises(self) -> Iterable[str]:
        """The exercises whose modules the zygote imports before the hand-ins are read."""
        ...

    def submissions(self) -> Iterable[Submission]:
        """The hand-ins, loaded (loading never runs learner code)."""
        ...


class Sink(Protocol):
    """Where a run's results go (see the module's docstring)."""

    def kept(self, sub: Submission, hex_digest: str) -> Any:
        """The result already there for this very submission (its digest), or None."""
        ...

    def put(self, sub: Submission, result: GradingResult) -> None:
        """Keep ``result``; may raise OSError (the run counts it and goes on)."""
        ...

    def close(self) -> None:
        """The run is over."""
        ...


class Progress(Protocol):
    """What a run tells its caller as it goes; these do nothing (a front door inherits
    them and overrides what it prints)."""

    def unchanged(self, sub: Submission, done: Any) -> None:
        """``sub`` is unchanged since ``done`` (the sink's result) was written."""
        return None

    def started(self, count: int) -> None:
        """``count`` submissions are to be graded (the others were kept)."""
        return None

    def graded(self, sub: Submission, result: GradingResult) -> None:
        """``result`` of ``sub`` reached the sink."""
        return None

    def unwritten(self, sub: Submission, exc: OSError) -> None:
        """The sink could not take ``sub``'s result (``exc``, an OSError)."""
        return None


class Quiet(Progress):
    """A :class:`Progress` that tells nothing: what :func:`grade_all` uses without one."""


class Held:
    """A sink that keeps the results in ``results``, in the order they arrive."""

    def __init__(self) -> None:
        self.results: list[GradingResult] = []

    def kept(self, sub: Submission, hex_digest: str) -> None:
        return None

    def put(self, sub: Submission, result: GradingResult) -> None:
        self.results.append(result)

    def close(self) -> None:
        pass


def grade_all(source: Source, sink: Sink, limits: Limits, slots: Sequence[int] = (0,),
              force: bool = False, progress: Progress | None = None) -> int:
    """Grade every submission of ``source`` into ``sink``; the number the sink refused.

    ``limits`` is a :class:`~autograder.sandbox.Limits`; ``slots`` the sandbox
    slots to grade on, one thread each; ``force`` regrades what the sink
    already holds. Each result reaches the sink as it arrives, so a run
    killed midway keeps every result written so far.
    """
    progress = progress or Quiet()
    prepared: Exception | None
    try:  # a failure here is a grader fault of every submission, reported below
        prepare(source.exercises(), source.private)
        prepared = None
    except Exception as exc:
        prepared = exc
    todo: list[tuple[Submission, str]] = []
    for sub in source.submissions():
        hex_digest = digest(sub, limits)
        done = None if force else sink.kept(sub, hex_digest)
        if done:
            progress.unchanged(sub, done)
        else:
            todo.append((sub, hex_digest))
    progress.started(len(todo))
    free: queue.Queue[int] = queue.Queue()
    for slot in slots:
        free.put(slot)

    def one(sub: Submission, hex_digest: str) -> GradingResult:
        if prepared is not None:  # one exception, its traceback formatted as it was raised
            return fault(sub.exercise, prepared, hex_digest)
        slot = free.get()
        try:
            return grade_one(sub, limits, slot, hex_digest, source.hide)
        finally:
            free.put(slot)

    refused = 0
    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        futures: dict[Future[GradingResult], Submission] = {pool.submit(one, sub, d): sub
                                                             for sub, d in todo}
        for future in as_completed(futures):
            sub, result = futures[future], future.result()
            try:
                sink.put(sub, result)
            except OSError as exc:
                refused += 1
                progress.unwritten(sub, exc)
                continue
            progress.graded(sub, result)
    sink.close()
    return refused


def grade_one(sub: Submission, limits: Limits, slot: int, hex_digest: str | None = None,
              hide: Sequence[str] = ()) -> GradingResult:
    """The :class:`GradingResult` of one loaded submission, graded on sandbox ``slot``:
    the unit every front door grades with (the command line's and Gradescope's batch
    loop, :func:`grade_all`; the service's threads and workers, one stored row at a
    time). Never raises: a grader fault gives an ``error`` result whose ``fault`` keeps
    the traceback. ``hex_digest`` defaults to :func:`digest`; the process has been
    prepared once (:func:`prepare`)."""
    hex_digest = hex_digest or digest(sub, limits)
    try:
        return grade(sub, limits, slot, hex_digest, hide)
    except Exception as exc:  # a grader fault must still give this learner a result
        return fault(sub.exercise, exc, hex_digest)


def grade(sub: Submission, limits: Limits, slot: int, hex_digest: str,
          hide: Sequence[str] = ()) -> GradingResult:
    """Run and judge one loaded submission: its :class:`GradingResult`, ``seconds``
    the wall time of both. Raises only on a grader fault (see :func:`grade_all`)."""
    start = time.monotonic()
    outcome: Outcome | None = None
    if not sub.unreadable and sub.attempted:
        request = {"exercise": sub.exercise, "seed": seed_for(hex_digest),
                   "memory_mib": limits.memory_mib, "hide": list(hide),
                   "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
        outcome = sandbox.run(request, limits, slot)
    return judged(sub, outcome, hex_digest, time.monotonic() - start)


def judged(sub: Submission, outcome: Outcome | None, hex_digest: str,
           seconds: float = 0.0) -> GradingResult:
    """The :class:`GradingResult` for a submission and its sandbox outcome (None: nothing ran).

    Never raises: the reply comes from the learner's process, so any shape it
    has that the hidden tests cannot read gives this submission an ``error``
    result, never a crash of the class run.
    """
    trace, version = "", grading_version(sub.exercise)  # what judges it: loaded now
    try:
        checks, output, status = judge.verdict(sub, outcome, seed_for(hex_digest))
    except Exception as exc:
        checks, output, status = (judge.not_run(sub.exercise),
                                  f"the grader could not read what your code produced "
                                  f"({type(exc).__name__}); please tell your instructor", Status.ERROR)
        trace = "".join(traceback.format_exception(exc))  # for the instructor only
    return GradingResult(tuple(checks), output, status, hex_digest, seconds,
                         outcome.output_tail if outcome else "", sub.exercise, fault=trace,
                         version=version)


def fault(exercise: str, exc: BaseException, hex_digest: str = "") -> GradingResult:
    """The result of a submission the grader itself failed on (a bug, not the learner's):
    plain words for the learner, ``exc``'s traceback in ``fault`` for the instructor."""
    message = (f"the grader failed on this submission ({type(exc).__name__}); "
               "please tell your instructor")
    trace = "".join(traceback.format_exception(exc))
    return GradingResult(tuple(judge.not_run(exercise)), message, Status.ERROR, hex_digest,
                         exercise=exercise, fault=trace)
