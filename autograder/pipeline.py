"""The grading pipeline, in order, for one submission:

1. :mod:`~autograder.submission` reads the hand-in (no learner code runs);
2. :mod:`~autograder.sandbox` runs its code and the probes in a limited process;
3. :mod:`~autograder.grade` judges the observations with the hidden tests;
4. :mod:`~autograder.results` writes Gradescope results atomically.

Step 2 runs in worker threads (the learner's process does the work); steps 3-4
run in the calling thread as results arrive, so a class killed midway keeps
every result written so far.
"""
import functools
import hashlib
import sys
from pathlib import Path

from autograder import grade, sandbox


@functools.lru_cache(maxsize=1)
def grader_digest():
    """Hash of the grader's own code: a changed test or probe regrades everything."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def digest(sub, limits):
    """Identity of what is graded: file bytes, exercise, grader code, limits (hex)."""
    h = hashlib.sha256()
    try:
        h.update(sub.path.read_bytes())
    except OSError:
        h.update(b"<unreadable>")
    h.update(f"{sub.exercise}|{grader_digest()}|{limits}".encode())
    return h.hexdigest()


def seed_for(hex_digest):
    """Input seed for a submission: fixed by its digest, unknown before grading."""
    return int(hex_digest[:8], 16)


def execute(sub, limits, slot, hex_digest, hide=()):
    """Step 2: return the sandbox :class:`~autograder.sandbox.Outcome` or None.

    ``hide`` lists directories the learner's process must not see (the
    class's submissions, the results folder).
    """
    if sub.unreadable or not sub.attempted:
        return None
    request = {"exercise": sub.exercise, "seed": seed_for(hex_digest),
               "memory_mib": limits.memory_mib, "hide": list(hide),
               "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
    return sandbox.run(request, limits, slot)


def hidden_dirs(paths):
    """Folders holding submissions or results, minus any the grader itself needs."""
    needed = [Path(__file__).resolve().parent.parent, Path(sys.prefix).resolve()]
    dirs = set()
    for path in map(Path, paths):
        path = path.resolve()
        folder = path if path.is_dir() else path.parent
        if not any(folder == n or folder in n.parents for n in needed):
            dirs.add(str(folder))
    return sorted(dirs)


def judge(sub, outcome, hex_digest):
    """Step 3: ``(tests, output, status)`` for a submission and its outcome.

    Never raises: the reply comes from the learner's process, so any shape
    it has that the hidden tests cannot read gives this submission an
    ``error`` result, never a crash of the class run.
    """
    try:
        return _judge(sub, outcome, hex_digest)
    except Exception as exc:
        return _failed(sub, f"the grader could not read what your code produced "
                            f"({type(exc).__name__}); please tell your instructor", "error")


def _judge(sub, outcome, hex_digest):
    if sub.unreadable:
        return _failed(sub, sub.unreadable, "unreadable")
    if not sub.attempted:
        return _failed(sub, "not attempted: the answer cell is still the released stub",
                       "not attempted")
    if outcome.status != "ok":
        return _failed(sub, outcome.message, outcome.status)
    reply = outcome.reply
    obs = reply["obs"] if isinstance(reply.get("obs"), dict) else {}
    errors = reply.get("cell_errors")
    notes = [str(e)[:500] for e in errors][:10] if isinstance(errors, list) else []
    if "missing" in obs or "probe_error" in obs:
        reason = (f"`{obs['missing']}` is not defined" if "missing" in obs
                  else f"the tests could not run: {obs['probe_error']}")
        return _failed(sub, "; ".join([reason] + notes), "incomplete")
    tests = grade.judge(sub.exercise, obs, seed_for(hex_digest))
    output = "Graded." if not notes else "Graded. Problems while running your code: " + "; ".join(notes)
    return tests, output + "".join(f" Note: {n}." for n in sub.notes), "graded"


def _failed(sub, message, status):
    return grade.all_failed(sub.exercise, message), message, status
