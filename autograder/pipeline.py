"""The grading pipeline, in order, for one submission:

1. :mod:`~autograder.submission` reads the hand-in (no learner code runs);
2. :mod:`~autograder.sandbox` runs its code and the probes in a limited process;
3. :mod:`~autograder.grade` judges the observations with the hidden tests;
4. :mod:`~autograder.results` writes Gradescope results atomically.

:func:`grade` does steps 2-3 and is safe to call from worker threads (the
learner's process does the work; judging is plain function calls); the caller
writes each result as it arrives, so a class killed midway keeps every result
written so far.
"""
import functools
import hashlib
import time
from pathlib import Path

from autograder import grade as hidden, results, sandbox


@functools.lru_cache(maxsize=1)
def grader_digest():
    """Hash of the grader's own code: a changed test or probe regrades everything
    (sample answers, in the exercises' ``hidden/samples/``, are not the grader's code)."""
    h, root = hashlib.sha256(), Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        if "samples" not in path.relative_to(root).parts:
            h.update(path.read_bytes())
    return h.hexdigest()


def digest(sub, limits):
    """Identity of what is graded: file bytes, exercise, grader code, limits (hex)."""
    h = hashlib.sha256()
    h.update(f"{sub.sha256 or '<unreadable>'}|{sub.exercise}|{grader_digest()}|{limits}".encode())
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


def grade(sub, limits, slot, hex_digest, hide=()):
    """Steps 2-3 for a loaded submission: its results.json dict (never raises on bad input).

    ``execution_time`` is the wall time of both steps, in seconds.
    """
    start = time.monotonic()
    outcome = execute(sub, limits, slot, hex_digest, hide)
    tests, output, status = judge(sub, outcome, hex_digest)
    return results.results_json(tests, output, status, hex_digest, time.monotonic() - start,
                                outcome.output_tail if outcome else "")


def grader_fault(exercise, exc, hex_digest=""):
    """A result for a submission the grader itself failed on (a bug, not the learner's)."""
    message = (f"the grader failed on this submission ({type(exc).__name__}); "
               "please tell your instructor")
    return results.results_json(hidden.all_failed(exercise), message, "error",
                                hex_digest, 0.0)


def hidden_dirs(paths):
    """Folders holding submissions or results, minus any the grader itself needs."""
    needed = [Path(p) for p in sandbox.import_paths()]
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
        return _failed(sub, sub.unreadable, "wrong exercise" if sub.other_exercise else "unreadable")
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
        # the cause (a cell that failed, e.g. a syntax error) before its effect
        return _failed(sub, "; ".join(notes + [reason]), "incomplete")
    tests = hidden.judge(sub.exercise, obs, seed_for(hex_digest))
    passed = sum(t["status"] == "passed" for t in tests)
    output = (f"All {passed} checks passed." if passed == len(tests)
              else f"{passed} of {len(tests)} checks passed.")
    if notes:
        output += " Problems while running your code: " + "; ".join(notes) + "."
    return tests, output + "".join(f" Note: {n}." for n in sub.notes), "graded"


def _failed(sub, message, status):
    return hidden.all_failed(sub.exercise), message, status
